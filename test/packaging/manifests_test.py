#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The shipped Kubernetes manifests and containerd snippets agree with each
other and with the installer.

usage: manifests_test.py <source-dir> [unittest args]
"""
import glob
import os
import re
import sys
import tomllib
import unittest

import yaml

SOURCE_DIR = ""

# Keys whose only sources are other pods or specshim itself: never passed from a Pod.
NEVER_FROM_PODS = {"specshim.io/pod", "specshim.io/cdi-devices", "specshim.io/resources", "cdi.k8s.io/*",
                   "specshim.io/patches"}


def load_yaml(name):
    with open(os.path.join(SOURCE_DIR, "packaging", "kubernetes", name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def load_snippet(name):
    with open(os.path.join(SOURCE_DIR, "containerd-config", name), "rb") as f:
        return tomllib.load(f)


def handler_of(snippet, plugin):
    runtimes = snippet["plugins"][plugin]["containerd"]["runtimes"]
    assert list(runtimes) == ["specshim"], f"one handler per snippet, got {list(runtimes)}"
    return runtimes["specshim"]


def the(docs, kind):
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


class ManifestsTest(unittest.TestCase):
    def test_every_manifest_parses_and_names_its_objects(self):
        files = sorted(glob.glob(os.path.join(SOURCE_DIR, "packaging", "kubernetes", "*.yaml")))
        self.assertGreaterEqual(len(files), 2)
        for f in files:
            docs = load_yaml(os.path.basename(f))
            self.assertTrue(docs, f)
            for d in docs:
                for key in ("apiVersion", "kind", "metadata"):
                    self.assertIn(key, d, f"{f}: {d.get('kind')}")
                self.assertRegex(d["metadata"]["name"], r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", f)

    def test_installer_image_installs_the_deb_of_its_own_architecture(self):
        """Each platform of the multi-arch image (TARGETARCH: amd64, arm64) copies
        and installs only the .deb of that architecture, named as CPack names it
        (packaging/CPackConfig.cmake: specshim_<version>_<arch>.deb)."""
        with open(os.path.join(SOURCE_DIR, "packaging", "kubernetes", "Containerfile")) as f:
            lines = [l for l in f.read().splitlines() if l and not l.startswith("#")]
        self.assertRegex(lines[0], r"^FROM ")
        self.assertIn("ARG TARGETARCH", lines[1:], "an ARG before FROM is not seen by COPY and RUN")
        debs = re.findall(r"specshim_\S*?\.deb", "\n".join(lines))
        self.assertTrue(debs)
        for deb in debs:
            pattern = deb.replace("${TARGETARCH}", "{arch}")
            if pattern == "specshim_*.deb":  # the clean-up
                continue
            self.assertEqual(pattern, "specshim_*_{arch}.deb", deb)
            for arch, other in (("amd64", "arm64"), ("arm64", "amd64")):
                self.assertTrue(glob.fnmatch.fnmatch(f"specshim_0.1.0_{arch}.deb", pattern.format(arch=arch)))
                self.assertFalse(glob.fnmatch.fnmatch(f"specshim_0.1.0_{other}.deb", pattern.format(arch=arch)))

    def test_runtimeclass_selects_the_containerd_handler(self):
        rc = the(load_yaml("runtimeclass.yaml"), "RuntimeClass")
        self.assertEqual(rc["apiVersion"], "node.k8s.io/v1")
        self.assertEqual(rc["metadata"]["name"], "specshim")
        self.assertEqual(rc["handler"], "specshim")
        handler_of(load_snippet("containerd-1.x.toml"), "io.containerd.grpc.v1.cri")
        handler_of(load_snippet("containerd-2.x.toml"), "io.containerd.cri.v1.runtime")

    def test_runtimeclass_schedules_only_where_the_daemonset_installs(self):
        rc = the(load_yaml("runtimeclass.yaml"), "RuntimeClass")
        ds = the(load_yaml("daemonset.yaml"), "DaemonSet")
        self.assertEqual(rc["scheduling"]["nodeSelector"], ds["spec"]["template"]["spec"]["nodeSelector"])

    def test_daemonset_can_do_what_the_installer_needs(self):
        docs = load_yaml("daemonset.yaml")
        ds = the(docs, "DaemonSet")
        ns = the(docs, "Namespace")
        self.assertEqual(ds["apiVersion"], "apps/v1")
        self.assertEqual(ds["metadata"]["namespace"], ns["metadata"]["name"])
        self.assertEqual(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "privileged")
        spec = ds["spec"]
        labels = spec["template"]["metadata"]["labels"]
        for k, v in spec["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v, "selector must match the pod template")
        pod = spec["template"]["spec"]
        self.assertTrue(pod["hostPID"], "restarting containerd enters the node's pid 1")
        [c] = pod["containers"]
        self.assertTrue(c["securityContext"]["privileged"])
        env = {e["name"]: e["value"] for e in c["env"]}
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        [host_root] = [n for n, p in mounts.items() if p == env["SPECSHIM_HOST_ROOT"]]
        self.assertEqual(volumes[host_root]["hostPath"]["path"], "/")

        with open(os.path.join(SOURCE_DIR, "packaging", "install-on-host.sh")) as f:
            script = f.read()
        for name in env:
            self.assertIn("${" + name + ":-", script, f"the installer does not read {name}")

    def test_snippets_register_the_same_handler_for_both_containerd_generations(self):
        v2 = handler_of(load_snippet("containerd-1.x.toml"), "io.containerd.grpc.v1.cri")
        v3 = handler_of(load_snippet("containerd-2.x.toml"), "io.containerd.cri.v1.runtime")
        self.assertEqual(v2, v3)
        self.assertEqual(v2["runtime_type"], "io.containerd.runc.v2")
        # install-on-host.sh rewrites exactly this value to the node's path.
        self.assertEqual(v2["options"], {"BinaryName": "/usr/bin/specshim"})
        self.assertEqual(load_snippet("containerd-2.x.toml")["version"], 3)
        self.assertNotIn("version", load_snippet("containerd-1.x.toml"),
                         "the 1.x snippet is appended to a version 2 file; a version key there would be misplaced")

    def test_allowlist_globs_match_what_they_are_meant_to(self):
        v2 = handler_of(load_snippet("containerd-1.x.toml"), "io.containerd.grpc.v1.cri")
        for key in ("pod_annotations", "container_annotations"):
            for pattern in v2[key]:
                # containerd matches with Go path.Match: `*` never crosses `/`.
                # A usable pattern is an exact key or "<prefix>/*"; a bare "*"
                # would match only slash-free keys, i.e. no annotation of ours.
                self.assertRegex(pattern, r"^[a-z0-9.-]+/([A-Za-z0-9_.-]+|\*)$", f"{key}: {pattern}")
        self.assertFalse(NEVER_FROM_PODS & set(v2["pod_annotations"]),
                         "these let a Pod author take devices it was not allocated, or skip patches")
        self.assertNotIn("specshim.io/patches", v2["container_annotations"])
        self.assertIn("cdi.k8s.io/*", v2["container_annotations"])

    def test_opt_in_annotations_are_documented_but_commented_out(self):
        with open(os.path.join(SOURCE_DIR, "containerd-config", "containerd-1.x.toml")) as f:
            text = f.read()
        for opt_in in ('"cdi.k8s.io/*"', '"nvidia.com/gpu"'):
            self.assertRegex(text, r"(?m)^\s*# " + re.escape(opt_in) + ",$")


def unit_keys(name):
    """A systemd unit's key = value lines, each key's values in order."""
    keys = {}
    with open(os.path.join(SOURCE_DIR, "packaging", "systemd", name)) as f:
        for line in f:
            if "=" in line and not line.startswith(("#", "[")):
                k, v = line.rstrip("\n").split("=", 1)
                keys.setdefault(k, []).append(v)
    return keys


class UnitsTest(unittest.TestCase):
    def test_nvidia_cdi_unit_writes_the_spec_before_containerd_and_the_kubelet(self):
        service = unit_keys("specshim-nvidia-cdi.service")
        self.assertEqual(service["ExecStart"], ["/usr/bin/nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml"])
        self.assertEqual(set(service["Before"][0].split()), {"containerd.service", "kubelet.service"})
        self.assertEqual(service["Type"], ["oneshot"])
        # Stands aside where NVIDIA's own unit is installed.
        self.assertIn("!/usr/lib/systemd/system/nvidia-cdi-refresh.service", service["ConditionPathExists"])
        path = unit_keys("specshim-nvidia-cdi.path")
        self.assertEqual(path["Unit"], ["specshim-nvidia-cdi.service"])
        self.assertIn("/lib/modules/%v/modules.dep", path["PathChanged"])
        # What doctor and the create's error tell operators to run is what the unit runs.
        with open(os.path.join(SOURCE_DIR, "node", "include", "specshim", "node", "nvidia_cdi.h")) as f:
            header = f.read()
        self.assertIn('kRefresh = "' + service["ExecStart"][0].removeprefix("/usr/bin/") + '"', header)
        self.assertIn('"specshim-nvidia-cdi.service"', header)


if __name__ == "__main__":
    SOURCE_DIR = sys.argv[1]
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
