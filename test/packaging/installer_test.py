#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""packaging/install-on-host.sh against fake node roots.

The installer's source root is the package layout staged by `cmake --install`
from the build tree, so these tests also check that the package carries what
the installer needs. Version 2 (containerd 1.x) results are loaded by the real
containerd (`containerd config dump`), which must keep the node's other CRI
settings: an `imports` drop-in would not.

The default-handler install (`--handler runc`, HandlerTest) is loaded by the
system's containerd 1.6 and by the containerd 1.7 and 2.x that
scripts/fetch-containerd.sh unpacks (SPECSHIM_CONTAINERD_1_7_DIR and
SPECSHIM_CONTAINERD_2_DIR override where); without them those tests fail.

Config version 4 (containerd 2.3, V4Test) is checked without a containerd 2.3,
which Debian does not package: the root is containerd 2.3's `config default`
(fixtures/containerd-2.3-config-default.toml), every result is parsed with
tomllib and its tables asserted exactly, containerd 2.1 is shown to refuse the
version 4 root, and a copy of the node's files whose `version = 4` lines say 3
is loaded by containerd 2.1 to show the merge. ToolkitTest installs on nodes
laid out as `nvidia-ctk runtime configure` leaves them (fixtures/nvidia-ctk-*,
see fixtures/README.md). CheckBeforeRestartTest runs the real containerd 2.1 as
the node's containerd (SPECSHIM_CONTAINERD_CHECK_CMD, with the node's paths
mapped under the fake node root).

usage: installer_test.py <source-dir> <build-dir> [unittest args]
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
import unittest

SOURCE_DIR = BUILD_DIR = ""
STAGE = ""  # package layout, staged once

# Debian 12's /etc/containerd/config.toml: a real node config with CRI settings.
DEBIAN_CONFIG = """version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "/var/lib/containerd/opt"
"""

SYSTEMD_CONFIG = """version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
"""

V3_CONFIG = """version = 3

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
"""


# An NVIDIA Container Toolkit node on containerd 1.x: NCT is the BinaryName of
# the default handler runc, beside the handler's other options.
NCT_V2_CONFIG = """version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".cni]
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      privileged_without_host_devices = true
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/bin/nvidia-container-runtime"   # nvidia-ctk runtime configure
        Root = "/run/containerd/runc-nvidia"
        SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
"""

# Seed 002, an ACK GPU node (Kubernetes 1.36, containerd 2.x): the default
# handler runc runs NCT by its bare name, with no RuntimeClass.
ACK_V3_CONFIG = """version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[plugins]
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "registry-cn-hangzhou-vpc.ack.aliyuncs.com/acs/pause:3.10"
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = "/etc/containerd/cert.d"
  [plugins."io.containerd.cri.v1.runtime"]
    enable_cdi = true
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dir = "/opt/cni/bin"
      conf_dir = "/etc/cni/net.d"
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes]
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"
          pod_annotations = ["io.kubernetes.cri.rdt-class"]
          [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
            BinaryName = "nvidia-container-runtime"
            Root = "/run/containerd/runc"
            SystemdCgroup = true
"""

CONTAINERD_ENV = {"1.7": "SPECSHIM_CONTAINERD_1_7_DIR", "2": "SPECSHIM_CONTAINERD_2_DIR"}


def containerd_binary(tier):
    """The containerd of a tier: the system's 1.6, or the 1.7 and 2.x that
    scripts/fetch-containerd.sh unpacks. A missing one fails the test."""
    if tier == "1.6":
        return "/usr/bin/containerd"
    env = CONTAINERD_ENV[tier]
    bin_dir = os.environ.get(env) or f"/var/cache/specshim-test/containerd-{tier}/usr/bin"
    binary = os.path.join(bin_dir, "containerd")
    if not os.access(binary, os.X_OK):
        raise AssertionError(f"containerd {tier} is not at {binary}: run scripts/install-deps.sh "
                             f"(it runs scripts/fetch-containerd.sh), or set {env} to a directory "
                             f"holding containerd, ctr and containerd-shim-runc-v2")
    return binary


def stage_package():
    stage = tempfile.mkdtemp(prefix="specshim-stage-")
    env = dict(os.environ, DESTDIR=stage)
    subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", "/usr"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return stage


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.chmod(path, mode)


class Node:
    """A fake node root plus a restart stub that counts its calls."""

    def __init__(self, tmp):
        self.root = os.path.join(tmp, "host")
        os.makedirs(self.root)
        self.restarts_file = os.path.join(tmp, "restarts")
        self.source = STAGE

    def path(self, p):
        return self.root + p

    def run(self, *args, env=None, check=True):
        e = dict(os.environ)
        e.pop("SPECSHIM_MODE", None)
        e.update({
            "SPECSHIM_HOST_ROOT": self.root,
            "SPECSHIM_SOURCE_ROOT": self.source,
            "SPECSHIM_RESTART_CMD": f"echo restarted >> {self.restarts_file}",
        })
        e.update(env or {})
        script = os.path.join(SOURCE_DIR, "packaging", "install-on-host.sh")
        r = subprocess.run([script, *args], env=e, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError(f"installer {args} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        return r

    def restarts(self):
        if not os.path.exists(self.restarts_file):
            return 0
        with open(self.restarts_file) as f:
            return len(f.read().splitlines())

    def backups(self, cfg="/etc/containerd/config.toml"):
        d, base = os.path.split(self.path(cfg))
        return sorted(f for f in os.listdir(d) if f.startswith(base + ".specshim-backup."))

    def files(self):
        out = []
        for dirpath, _, filenames in os.walk(self.root):
            for f in filenames:
                out.append(os.path.relpath(os.path.join(dirpath, f), self.root))
        return sorted(out)

    def dump(self, cfg="/etc/containerd/config.toml", tier="1.6", as_version=None):
        """The merged configuration as containerd of that tier itself reads it.
        The root's imports are read from the node root. as_version: containerd 2.3
        is not here, and 2.1 refuses a version 4 root; the check of a version 4
        result loads a copy of the node's /etc/containerd whose `version = 4` lines
        say as_version (3) instead, every other byte as installed."""
        root = self.root
        if as_version is not None:
            root = os.path.join(os.path.dirname(self.root), "as-version")
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(self.path("/etc/containerd"), root + "/etc/containerd", symlinks=True)
            for dirpath, _, filenames in os.walk(root):
                for name in filenames:
                    f = os.path.join(dirpath, name)
                    with open(f) as fh:
                        text = fh.read()
                    write(f, re.sub(r"^version = 4$", f"version = {as_version}", text, flags=re.M))
        path = nodeified(root, cfg, os.path.join(os.path.dirname(self.root), "dump-" + os.path.basename(cfg)))
        r = subprocess.run([containerd_binary(tier), "--config", path, "config", "dump"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"containerd {tier} rejected the config:\n{r.stderr}")
        return tomllib.loads(r.stdout)

    def checker(self, tier="2"):
        """A SPECSHIM_CONTAINERD_CHECK_CMD that runs the real containerd of a tier
        as `chroot <node root> containerd` would: `--config <node path> config dump`
        over the node root's files (its imports mapped there)."""
        script = os.path.join(os.path.dirname(self.root), f"check-containerd-{tier}")
        write(script, f"""#!{sys.executable}
import os, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from installer_test import nodeified
binary, root = {containerd_binary(tier)!r}, {self.root!r}
args = sys.argv[1:]
if args[:1] == ["--config"] and args[2:] == ["config", "dump"]:
    args = ["--config", nodeified(root, args[1], os.path.join(os.path.dirname(root), "checked.toml"))] + args[2:]
os.execv(binary, [binary] + args)
""", 0o755)
        return script


def nodeified(root, cfg, out):
    """The node config cfg, as a file that containerd run outside the node root
    reads as the node's: a copy at out whose top-level imports (absolute, or
    relative to cfg's directory) name the files under root."""
    path = root + cfg
    with open(path) as f:
        text = f.read()
    imports = tomllib.loads(text).get("imports")
    if imports is None:
        return path
    mapped = [root + (e if e.startswith("/") else os.path.join(os.path.dirname(cfg), e)) for e in imports]
    write(out, re.sub(r"^imports *=.*$", lambda _: "imports = " + json.dumps(mapped), text, count=1, flags=re.M))
    return out


def cri_v2(dump):
    return dump["plugins"]["io.containerd.grpc.v1.cri"]


def cri_runtime(dump):
    """The CRI runtime settings of a dump: 1.x's CRI table, 2.x's cri.v1.runtime
    (a version 2 file is migrated in memory)."""
    plugins = dump["plugins"]
    return plugins.get("io.containerd.cri.v1.runtime") or plugins["io.containerd.grpc.v1.cri"]


def cni_bin_dirs(cri):
    """2.1 migrates a version 2 `bin_dir` to `bin_dirs`."""
    return cri["cni"].get("bin_dirs") or [cri["cni"]["bin_dir"]]


def sandbox_image(dump):
    plugins = dump["plugins"]
    if "io.containerd.cri.v1.images" in plugins:
        return plugins["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"]
    return plugins["io.containerd.grpc.v1.cri"]["sandbox_image"]


class NodeCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="specshim-installer-")
        self.node = Node(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class InstallerTest(NodeCase):

    # ---- containerd 1.x (config version 2) ----------------------------------

    def test_v2_install_keeps_node_settings_and_uninstall_restores_bytes(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, DEBIAN_CONFIG)
        n.run()

        binary = n.path("/usr/local/bin/specshim")
        self.assertEqual(read(binary), read(os.path.join(STAGE, "usr/bin/specshim")))
        self.assertEqual(stat.S_IMODE(os.stat(binary).st_mode), 0o755)
        helper = n.path("/usr/local/bin/specshim-kubelet")  # where specshim looks first
        self.assertEqual(read(helper), read(os.path.join(STAGE, "usr/libexec/specshim/specshim-kubelet")))
        self.assertEqual(stat.S_IMODE(os.stat(helper).st_mode), 0o755)
        self.assertEqual(read(n.path("/etc/specshim/config.toml")),
                         read(os.path.join(SOURCE_DIR, "packaging", "specshim.toml")))
        self.assertFalse(os.path.exists(n.path("/etc/containerd/conf.d/specshim.toml")),
                         "containerd 1.x must not get a drop-in: imports replace whole plugin tables")
        self.assertEqual(n.restarts(), 1)
        [backup] = n.backups()
        self.assertEqual(read(os.path.join(os.path.dirname(cfg), backup)), DEBIAN_CONFIG.encode())

        cri = cri_v2(n.dump())
        self.assertEqual(cri["cni"]["bin_dir"], "/usr/lib/cni", "the node's CRI settings must survive")
        handler = cri["containerd"]["runtimes"]["specshim"]
        self.assertEqual(handler["runtime_type"], "io.containerd.runc.v2")
        # Naming any runtime drops containerd 1.x's built-in runc; CRI would not load without it.
        self.assertEqual(cri["containerd"]["default_runtime_name"], "runc")
        self.assertEqual(cri["containerd"]["runtimes"]["runc"]["runtime_type"], "io.containerd.runc.v2")
        self.assertEqual(handler["options"]["BinaryName"], "/usr/local/bin/specshim")
        self.assertIn("cdi.k8s.io/*", handler["container_annotations"])
        self.assertIn("specshim.io/passwd-name", handler["pod_annotations"])

        installed = read(cfg)
        n.run()  # idempotent: nothing changes, containerd is left alone
        self.assertEqual(read(cfg), installed)
        self.assertEqual(n.restarts(), 1)
        self.assertEqual(len(n.backups()), 1)

        n.run("--uninstall")
        self.assertEqual(read(cfg), DEBIAN_CONFIG.encode())
        self.assertEqual(n.restarts(), 2)
        self.assertFalse(os.path.exists(binary))
        self.assertFalse(os.path.exists(helper))
        self.assertFalse(os.path.exists(n.path("/etc/specshim")))
        self.assertFalse(os.path.exists(n.path("/var/lib/specshim")))

    def test_why_not_imports_on_containerd_1x(self):
        """Importing the 1.x snippet would reset the node's CRI settings: the reason the
        installer appends it instead."""
        n = self.node
        snippet = "/usr/share/specshim/containerd/containerd-1.x.toml"
        write(n.path(snippet), read(os.path.join(STAGE, snippet.lstrip("/"))))
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG.replace(
            "version = 2\n", f'version = 2\nimports = ["{snippet}"]\n', 1))
        cri = cri_v2(n.dump())
        self.assertIn("specshim", cri["containerd"]["runtimes"])
        self.assertNotEqual(cri["cni"]["bin_dir"], "/usr/lib/cni", "containerd 1.x now merges imports key by key")

    def test_v2_config_without_final_newline_is_restored_exactly(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = DEBIAN_CONFIG.rstrip("\n")
        write(cfg, original)
        n.run()
        self.assertIn("specshim", cri_v2(n.dump())["containerd"]["runtimes"])
        n.run("--uninstall")
        self.assertEqual(read(cfg), original.encode())

    def test_v2_follows_the_nodes_systemd_cgroup_driver(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), SYSTEMD_CONFIG)
        n.run()
        cri = cri_v2(n.dump())
        self.assertEqual(cri["sandbox_image"], "registry.k8s.io/pause:3.9")
        self.assertIs(cri["containerd"]["runtimes"]["specshim"]["options"]["SystemdCgroup"], True)
        self.assertIs(cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"], True)

    def test_v2_uninstall_keeps_later_admin_edits(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, DEBIAN_CONFIG)
        n.run()
        with open(cfg, "a") as f:
            f.write('\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n')
        n.run("--uninstall")
        text = read(cfg).decode()
        self.assertTrue(text.startswith(DEBIAN_CONFIG))
        self.assertNotIn("specshim", text)
        self.assertIn("certs.d", text)
        self.assertEqual(cri_v2(n.dump())["registry"]["config_path"], "/etc/containerd/certs.d")

    def test_v2_without_config_file_creates_and_removes_it(self):
        n = self.node
        n.run(env={"SPECSHIM_CONTAINERD_VERSION_CMD": "echo containerd github.com/containerd/containerd 1.7.13 abc"})
        self.assertIn("specshim", cri_v2(n.dump())["containerd"]["runtimes"])
        n.run("--uninstall")
        self.assertEqual(n.files(), [])

    def test_v2_other_default_runtime_without_a_table_is_refused(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG +
              '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "crun"\n')
        r = n.run(check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("default_runtime_name `crun` has no runtimes table", r.stderr)

    def test_v2_handler_defined_by_hand_is_refused(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"),
              DEBIAN_CONFIG + '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.specshim]\n')
        r = n.run(check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("already defines runtimes.specshim", r.stderr)
        self.assertEqual(n.restarts(), 0)

    # ---- containerd 2.x (config version 3) ----------------------------------

    def test_v3_dropin_and_imports_line_are_added_and_removed(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, V3_CONFIG)
        n.run()
        dropin = n.path("/etc/containerd/conf.d/specshim.toml")
        parsed = tomllib.loads(read(dropin).decode())
        handler = parsed["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["specshim"]
        self.assertEqual(handler["options"]["BinaryName"], "/usr/local/bin/specshim")
        config = tomllib.loads(read(cfg).decode())
        self.assertEqual(config["imports"], ["/etc/containerd/conf.d/specshim.toml"])
        self.assertEqual(config["version"], 3)
        self.assertEqual(n.restarts(), 1)

        n.run()
        self.assertEqual(n.restarts(), 1)
        self.assertEqual(tomllib.loads(read(cfg).decode())["imports"], ["/etc/containerd/conf.d/specshim.toml"])

        n.run("--uninstall")
        self.assertEqual(read(cfg), V3_CONFIG.encode())
        self.assertFalse(os.path.exists(n.path("/etc/containerd/conf.d")))
        self.assertEqual(n.restarts(), 2)

    def test_v3_existing_imports_list_gets_one_entry(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = "version = 3\nimports = ['/etc/containerd/site.toml']\n" + V3_CONFIG.split("\n", 1)[1]
        write(cfg, original)
        n.run()
        self.assertEqual(tomllib.loads(read(cfg).decode())["imports"],
                         ["/etc/containerd/conf.d/specshim.toml", "/etc/containerd/site.toml"])
        n.run("--uninstall")
        self.assertEqual(read(cfg), original.encode())

    def test_v3_empty_imports_list(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = "version = 3\nimports = []\n"
        write(cfg, original)
        n.run()
        self.assertEqual(tomllib.loads(read(cfg).decode())["imports"], ["/etc/containerd/conf.d/specshim.toml"])
        n.run("--uninstall")
        self.assertEqual(read(cfg), original.encode())

    def test_v3_glob_import_already_covers_the_dropin(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
        write(cfg, original)
        os.makedirs(n.path("/etc/containerd/conf.d"))
        n.run()
        self.assertEqual(read(cfg), original.encode())
        self.assertEqual(n.backups(), [])
        self.assertTrue(os.path.exists(n.path("/etc/containerd/conf.d/specshim.toml")))
        n.run("--uninstall")
        self.assertEqual(read(cfg), original.encode())
        self.assertEqual(os.listdir(n.path("/etc/containerd/conf.d")), [], "a conf.d it did not create stays")

    def test_v3_without_config_file_asks_containerd_for_its_version(self):
        n = self.node
        n.run(env={"SPECSHIM_CONTAINERD_VERSION_CMD":
                   "echo containerd github.com/containerd/containerd/v2 v2.0.2 c507a0257ea"})
        config = tomllib.loads(read(n.path("/etc/containerd/config.toml")).decode())
        self.assertEqual(config, {"version": 3, "imports": ["/etc/containerd/conf.d/specshim.toml"]})
        n.run("--uninstall")
        self.assertEqual(n.files(), [])

    # ---- what the installer must never do ------------------------------------

    def test_existing_specshim_config_is_never_overwritten_nor_removed(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        write(n.path("/etc/specshim/config.toml"), "# the node's own\n")
        n.run()
        n.run("--uninstall")
        self.assertEqual(read(n.path("/etc/specshim/config.toml")), b"# the node's own\n")

    def test_a_config_that_does_not_load_is_refused_before_any_change(self):
        # An upgrade whose specshim no longer reads the node's file: the node
        # keeps every file as it was, and the message names the line.
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        write(n.path("/etc/specshim/config.toml"), "[log]\nlevel = \"debug\"\n[chain]\nno-such-key = 1\n")
        before = n.files()
        r = n.run(check=False)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("refusing to install", r.stderr)
        self.assertIn("line 4: unknown key `chain.no-such-key`", r.stderr)
        self.assertIn("nothing on the node was changed", r.stderr)
        self.assertEqual(n.files(), before)
        self.assertEqual(read(n.path("/etc/containerd/config.toml")), DEBIAN_CONFIG.encode())
        self.assertEqual(n.restarts(), 0)

    def test_config_flag_installs_the_sites_file_or_keeps_the_old_one(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        n.run()
        shipped = read(n.path("/etc/specshim/config.toml"))
        site = os.path.join(self.tmp, "site.toml")

        write(site, "[passwd]\nname-template = \"u{uid}\"\n[cdi]\nenabled = flase\n")
        r = n.run("--config", site, check=False)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"config `{site}`: line 4", r.stderr)
        self.assertEqual(read(n.path("/etc/specshim/config.toml")), shipped)
        self.assertEqual(n.backups("/etc/specshim/config.toml"), [])

        write(site, "[passwd]\nname-template = \"u{uid}\"\n")
        r = n.run("--config", site, env={"SPECSHIM_CONFIG_FILE": ""})
        self.assertIn(f"installed {site} as /etc/specshim/config.toml", r.stdout)
        self.assertEqual(read(n.path("/etc/specshim/config.toml")), read(site))
        backups = n.backups("/etc/specshim/config.toml")
        self.assertEqual(len(backups), 1)
        self.assertEqual(read(n.path("/etc/specshim/" + backups[0])), shipped)
        self.assertEqual(n.restarts(), 1, "a new specshim config needs no containerd restart")

        # The same file again changes nothing; the environment variable works as the flag.
        r = n.run(env={"SPECSHIM_CONFIG_FILE": site})
        self.assertIn("already holds", r.stdout)
        self.assertEqual(len(n.backups("/etc/specshim/config.toml")), 1)
        n.run("--uninstall")
        self.assertEqual(read(n.path("/etc/specshim/config.toml")), read(site))

    def test_edited_specshim_config_survives_uninstall(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        n.run()
        with open(n.path("/etc/specshim/config.toml"), "a") as f:
            f.write("[log]\nlevel = \"debug\"\n")
        r = n.run("--uninstall")
        self.assertIn("edited on the node", r.stdout)
        self.assertTrue(os.path.exists(n.path("/etc/specshim/config.toml")))

    def test_binary_upgrade_does_not_restart_containerd(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        n.run()
        source = os.path.join(self.tmp, "source")
        shutil.copytree(STAGE, source, symlinks=True)
        # Another build: the same ELF (the installer checks its machine) with other bytes.
        newer = read(os.path.join(STAGE, "usr/bin/specshim")) + b"\n# newer build\n"
        write(os.path.join(source, "usr/bin/specshim"), newer, 0o755)
        n.source = source
        n.run()
        self.assertEqual(read(n.path("/usr/local/bin/specshim")), newer)
        self.assertEqual(n.restarts(), 1)

    def test_package_binary_in_place_is_used_not_copied(self):
        """A node with the .deb: --binary-path /usr/bin/specshim names the package's file."""
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        shutil.copytree(STAGE, n.root, symlinks=True, dirs_exist_ok=True)  # the .deb, unpacked
        n.source = n.root
        n.run("--binary-path", "/usr/bin/specshim")
        handler = cri_v2(n.dump())["containerd"]["runtimes"]["specshim"]
        self.assertEqual(handler["options"]["BinaryName"], "/usr/bin/specshim")
        self.assertFalse(os.path.exists(n.path("/usr/bin/specshim-kubelet")),
                         "the package's binary finds the package's helper in /usr/libexec/specshim")
        n.run("--uninstall")
        self.assertTrue(os.path.exists(n.path("/usr/bin/specshim")), "the package's binary is not ours to remove")
        self.assertTrue(os.path.exists(n.path("/usr/libexec/specshim/specshim-kubelet")))
        self.assertEqual(read(n.path("/etc/containerd/config.toml")), DEBIAN_CONFIG.encode())

    def test_uninstall_on_a_clean_node_is_a_no_op(self):
        n = self.node
        r = n.run("--uninstall")
        self.assertIn("nothing to uninstall", r.stdout)
        self.assertEqual(n.files(), [])
        r = n.run(env={"SPECSHIM_MODE": "uninstall"})
        self.assertIn("nothing to uninstall", r.stdout)

    # ---- specshim containerd check: the plan, nothing changed -------------------

    def check(self, *args):
        n = self.node
        return subprocess.run([os.path.join(STAGE, "usr", "bin", "specshim"), "containerd", "check",
                               "--host-root", n.root, "--source-root", n.source, *args],
                              capture_output=True, text=True)

    def test_check_plans_without_changing_and_agrees_once_configured(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, DEBIAN_CONFIG)
        r = self.check()
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("would: ", r.stdout)
        self.assertIn("check: configure would make", r.stdout)
        self.assertEqual(n.files(), ["etc/containerd/config.toml"])
        self.assertEqual(read(cfg), DEBIAN_CONFIG.encode())
        self.assertEqual(n.restarts(), 0)
        n.run()
        after, backups = read(cfg), n.backups()
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("check: the node is configured as configure would leave it", r.stdout)
        self.assertEqual(read(cfg), after)
        self.assertEqual(n.backups(), backups)
        r = self.check("--handler", "runc")  # a refusal: the other kind of install
        self.assertEqual(r.returncode, 1)
        self.assertIn("Switch in two steps", r.stderr)
        self.assertEqual(read(cfg), after)

    def test_package_has_every_path_the_daemonset_and_image_run(self):
        import re
        with open(os.path.join(SOURCE_DIR, "packaging", "kubernetes", "daemonset.yaml")) as f:
            text = f.read()
        with open(os.path.join(SOURCE_DIR, "packaging", "kubernetes", "Containerfile")) as f:
            text += f.read()
        paths = set(re.findall(r"/usr/libexec/specshim/[A-Za-z0-9_.-]+", text))
        self.assertTrue(paths)
        for p in paths:
            self.assertTrue(os.access(os.path.join(STAGE, p.lstrip("/")), os.X_OK), p)
        self.assertTrue(os.path.isfile(os.path.join(STAGE, "usr/bin/specshim")))
        self.assertTrue(os.path.isfile(os.path.join(STAGE, "etc/specshim/config.toml")))

    def test_binary_of_another_architecture_is_refused_before_any_change(self):
        """An image of the wrong architecture (arm64 on an amd64 node, or the
        reverse): the node's `uname -m` (a stand-in on PATH here) is not the
        ELF machine of the package's binary, and nothing on the node changes."""
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        with open(os.path.join(STAGE, "usr/bin/specshim"), "rb") as f:
            machine = int.from_bytes(f.read(20)[18:20], "little")
        built = {62: "x86_64", 183: "aarch64"}[machine]
        other = {"x86_64": "aarch64", "aarch64": "x86_64"}[built]
        fake_bin = os.path.join(self.tmp, "fake-bin")
        write(os.path.join(fake_bin, "uname"), f"#!/bin/sh\necho {other}\n", 0o755)
        r = n.run(env={"PATH": fake_bin + os.pathsep + os.environ["PATH"]}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"usr/bin/specshim` is built for {built}, but this node is {other} (uname -m)", r.stderr)
        self.assertEqual(n.files(), ["etc/containerd/config.toml"], "nothing is touched")
        self.assertEqual(read(n.path("/etc/containerd/config.toml")), DEBIAN_CONFIG.encode())
        self.assertEqual(n.restarts(), 0)
        # The same node, reporting the binary's own machine, installs.
        write(os.path.join(fake_bin, "uname"), f"#!/bin/sh\necho {built}\n", 0o755)
        n.run(env={"PATH": fake_bin + os.pathsep + os.environ["PATH"]})
        self.assertEqual(read(n.path("/usr/local/bin/specshim")), read(os.path.join(STAGE, "usr/bin/specshim")))

    def test_source_binary_that_is_no_elf_file_is_refused(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        source = os.path.join(self.tmp, "source")
        shutil.copytree(STAGE, source, symlinks=True)
        write(os.path.join(source, "usr/bin/specshim"), "#!/bin/sh\nexit 0\n", 0o755)
        n.source = source
        # The script runs the source root's specshim; this one cannot run, so
        # the staged binary does the work (and refuses the source root's).
        r = n.run(env={"SPECSHIM_INSTALLER": os.path.join(STAGE, "usr/bin/specshim")}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("usr/bin/specshim` is built for no ELF file, but this node is", r.stderr)
        self.assertEqual(n.files(), ["etc/containerd/config.toml"], "nothing is touched")

    def test_version_1_config_is_refused(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), '[plugins.cri]\n  sandbox_image = "pause"\n')
        r = n.run(check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("config version 1", r.stderr)
        self.assertEqual(n.files(), ["etc/containerd/config.toml"], "nothing is touched")

    def test_binary_path_must_be_a_plain_absolute_path(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        for bad in ("relative/specshim", '/usr/bin/spec"shim', "/usr/bin/a|b"):
            r = n.run("--binary-path", bad, check=False)
            self.assertNotEqual(r.returncode, 0, bad)
            self.assertIn("--binary-path", r.stderr)
        self.assertEqual(n.files(), ["etc/containerd/config.toml"])

    def test_failed_restart_is_an_error(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), DEBIAN_CONFIG)
        r = n.run(env={"SPECSHIM_RESTART_CMD": "false"}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("restart command failed", r.stderr)


class HandlerTest(NodeCase):
    """--handler runc: specshim becomes the BinaryName of the node's existing
    handler; each result is loaded by the real containerd 1.6, 1.7 and 2.x."""

    SPECSHIM = "/usr/local/bin/specshim"
    NCT = "/usr/bin/nvidia-container-runtime"

    def handler_in(self, dump, name="runc"):
        return cri_runtime(dump)["containerd"]["runtimes"][name]

    def assert_v2_loads(self, check, cfg="/etc/containerd/config.toml"):
        """A version 2 result as containerd 1.6, 1.7 and 2.x (migrating it) read it."""
        for tier in ("1.6", "1.7", "2"):
            with self.subTest(containerd=tier):
                check(self.node.dump(cfg, tier))

    def assert_untouched(self, before, restarts=0):
        """A refused run leaves every file as it was and containerd alone."""
        n = self.node
        self.assertEqual({f: read(n.path("/" + f)) for f in n.files()}, before)
        self.assertEqual(n.restarts(), restarts)

    def snapshot(self):
        n = self.node
        return {f: read(n.path("/" + f)) for f in n.files()}

    def doctor_config(self, path):
        """What specshim's own (strict) config loader says of a config file."""
        r = subprocess.run([os.path.join(STAGE, "usr/bin/specshim"), "doctor", "--config", path, "--json"],
                           capture_output=True, text=True)
        [config] = [c for c in json.loads(r.stdout)["checks"] if c["name"] == "config"]
        return config

    # ---- containerd 1.x (config version 2): the root file edited in place ----

    def test_v2_wrapper_binaryname_is_replaced_other_options_kept_uninstall_restores_bytes(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, NCT_V2_CONFIG)
        r = n.run("--handler", "runc")
        self.assertIn(f'BinaryName "{self.NCT}" replaced by {self.SPECSHIM}', r.stdout)
        self.assertIn("no longer runs", r.stdout)
        self.assertEqual(n.restarts(), 1)
        [backup] = n.backups()
        self.assertEqual(read(os.path.join(os.path.dirname(cfg), backup)), NCT_V2_CONFIG.encode())
        self.assertFalse(os.path.exists(n.path("/etc/containerd/conf.d")), "a version 2 root gets no drop-in")
        self.assertEqual(read(n.path("/etc/specshim/config.toml")), read(os.path.join(SOURCE_DIR, "packaging", "specshim.toml")),
                         "without --chain the shipped config, as it is")
        text = read(cfg).decode()
        self.assertEqual(text.count("\n"), NCT_V2_CONFIG.count("\n"), "one line rewritten, none added")
        self.assertIn(f'BinaryName = "{self.SPECSHIM}"  # install-on-host.sh --handler: was "{self.NCT}"', text)

        def check(dump):
            cri = cri_runtime(dump)
            runc = cri["containerd"]["runtimes"]["runc"]
            self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM)
            self.assertIs(runc["options"]["SystemdCgroup"], True)
            self.assertEqual(runc["options"]["Root"], "/run/containerd/runc-nvidia")
            self.assertEqual(runc["runtime_type"], "io.containerd.runc.v2")
            self.assertIs(runc["privileged_without_host_devices"], True)
            self.assertNotIn("specshim", cri["containerd"]["runtimes"])
            self.assertEqual(cri["containerd"]["default_runtime_name"], "runc")
            self.assertEqual(cri["cni"]["conf_dir"], "/etc/cni/net.d")
            self.assertEqual(sandbox_image(dump), "registry.k8s.io/pause:3.9")
        self.assert_v2_loads(check)

        installed = read(cfg)
        r = n.run("--handler", "runc")  # idempotent
        self.assertIn("no restart", r.stdout)
        self.assertEqual(read(cfg), installed)
        self.assertEqual(n.restarts(), 1)
        self.assertEqual(len(n.backups()), 1)

        r = n.run("--uninstall")
        self.assertIn(f'restored BinaryName "{self.NCT}"', r.stdout)
        self.assertEqual(read(cfg), NCT_V2_CONFIG.encode())
        self.assertEqual(n.restarts(), 2)
        self.assertFalse(os.path.exists(n.path("/usr/local/bin/specshim")))
        self.assertFalse(os.path.exists(n.path("/etc/specshim")))
        self.assertFalse(os.path.exists(n.path("/var/lib/specshim")))

    def test_v2_chain_keeps_the_wrapper_as_specshims_runtime_path(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, NCT_V2_CONFIG)
        r = n.run("--handler", "runc", "--chain")
        self.assertIn(f"which runs {self.NCT} in place of runc (--chain)", r.stdout)
        conf = n.path("/etc/specshim/config.toml")
        self.assertEqual(tomllib.loads(read(conf).decode())["runtime"]["path"], self.NCT)
        self.assertTrue(self.doctor_config(conf)["findings"][0]["text"].endswith(": valid"))
        self.assert_v2_loads(lambda d: self.assertEqual(self.handler_in(d)["options"]["BinaryName"], self.SPECSHIM))
        n.run("--handler", "runc", "--chain")
        self.assertEqual(n.restarts(), 1)
        n.run("--uninstall")
        self.assertEqual(read(cfg), NCT_V2_CONFIG.encode())
        self.assertFalse(os.path.exists(conf), "the config it rendered, unchanged, goes with the uninstall")

    def test_v2_without_a_runc_table_appends_one_with_runtime_type(self):
        """Debian's default config relies on containerd's built-in runc."""
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, DEBIAN_CONFIG)
        r = n.run("--handler", "runc", "--chain")
        self.assertIn("nothing to chain", r.stdout)
        self.assertIn("it had no BinaryName of its own", r.stdout)
        self.assertNotIn("path =", read(n.path("/etc/specshim/config.toml")).decode().split("[log]")[0].replace("# path", ""))

        def check(dump):
            cri = cri_runtime(dump)
            runc = cri["containerd"]["runtimes"]["runc"]
            self.assertEqual(runc["runtime_type"], "io.containerd.runc.v2")
            self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM)
            self.assertEqual(cri["containerd"]["default_runtime_name"], "runc")
            self.assertEqual(cni_bin_dirs(cri), ["/usr/lib/cni"])
        self.assert_v2_loads(check)
        installed = read(cfg)
        n.run("--handler", "runc")
        self.assertEqual(read(cfg), installed)
        self.assertEqual(n.restarts(), 1)
        n.run("--uninstall")
        self.assertEqual(read(cfg), DEBIAN_CONFIG.encode())

    def test_v2_options_table_without_binaryname_gets_one_line(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, SYSTEMD_CONFIG)
        n.run("--handler", "runc")
        self.assertEqual(read(cfg).decode().count("\n"), SYSTEMD_CONFIG.count("\n") + 1)

        def check(dump):
            runc = self.handler_in(dump)
            self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM)
            self.assertIs(runc["options"]["SystemdCgroup"], True)
            self.assertEqual(sandbox_image(dump), "registry.k8s.io/pause:3.9")
        self.assert_v2_loads(check)
        n.run("--handler", "runc")
        self.assertEqual(n.restarts(), 1)
        n.run("--uninstall")
        self.assertEqual(read(cfg), SYSTEMD_CONFIG.encode())

    def test_v2_handler_table_without_options_gets_an_options_block(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = ('version = 2\ndisabled_plugins = ["io.containerd.snapshotter.v1.aufs",\n'
                    '  "io.containerd.snapshotter.v1.zfs"]  # [not.a.table]\n'
                    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                    '  runtime_type = "io.containerd.runc.v2"\n  pod_annotations = ["example.com/*"]\n'
                    '[plugins."io.containerd.grpc.v1.cri".cni]\n  conf_dir = "/etc/cni/net.d"')  # no final newline
        write(cfg, original)
        n.run("--handler", "runc")

        def check(dump):
            runc = self.handler_in(dump)
            self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM)
            self.assertEqual(runc["pod_annotations"], ["example.com/*"])
            self.assertEqual(cri_runtime(dump)["cni"]["conf_dir"], "/etc/cni/net.d")
        self.assert_v2_loads(check)
        n.run("--handler", "runc")
        self.assertEqual(n.restarts(), 1)
        n.run("--uninstall")
        self.assertEqual(read(cfg), original.encode())

    def test_v2_any_existing_handler_name(self):
        """--handler nvidia: the handler NCT's installer adds, made the default."""
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = NCT_V2_CONFIG.replace('default_runtime_name = "runc"', 'default_runtime_name = "nvidia"') + (
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]\n'
            "  runtime_type = 'io.containerd.runc.v2'\n"
            "  [plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.nvidia.options]\n"
            "    BinaryName = '/usr/bin/nvidia-container-runtime'\n"
            "    SystemdCgroup = true\n")
        write(cfg, original)
        n.run("--handler", "nvidia")

        def check(dump):
            runtimes = cri_runtime(dump)["containerd"]["runtimes"]
            self.assertEqual(runtimes["nvidia"]["options"]["BinaryName"], self.SPECSHIM)
            self.assertIs(runtimes["nvidia"]["options"]["SystemdCgroup"], True)
            self.assertEqual(runtimes["runc"]["options"]["BinaryName"], self.NCT, "only the named handler changes")
        self.assert_v2_loads(check)
        n.run("--uninstall")
        self.assertEqual(read(cfg), original.encode())

    def test_without_config_file_as_the_e2e_test_runs_it(self):
        n = self.node
        n.run("--handler", "runc", "--config-version", "2", "--no-restart")
        self.assertEqual(n.restarts(), 0)
        self.assert_v2_loads(lambda d: self.assertEqual(self.handler_in(d)["options"]["BinaryName"], self.SPECSHIM))
        self.assertEqual(self.handler_in(n.dump())["runtime_type"], "io.containerd.runc.v2")
        n.run("--uninstall", "--no-restart")
        self.assertEqual(n.files(), [])

        n.run("--handler", "runc", "--config-version", "3", "--no-restart")
        self.assertEqual(tomllib.loads(read(n.path("/etc/containerd/config.toml")).decode()),
                         {"version": 3, "imports": ["/etc/containerd/conf.d/specshim.toml"]})
        runc = self.handler_in(n.dump(tier="2"))
        self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM)
        self.assertEqual(runc["runtime_type"], "io.containerd.runc.v2")
        n.run("--uninstall", "--no-restart")
        self.assertEqual(n.files(), [])
        self.assertEqual(n.restarts(), 0)

    def test_v2_crlf_and_no_final_newline_are_restored_exactly(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        for original in (NCT_V2_CONFIG.replace("\n", "\r\n"),
                         NCT_V2_CONFIG.split("  [plugins.\"io.containerd.grpc.v1.cri\".registry]")[0].rstrip("\n"),
                         SYSTEMD_CONFIG.split("      SystemdCgroup")[0].rstrip("\n")):
            with self.subTest(original=original[-40:]):
                write(cfg, original)
                n.run("--handler", "runc")
                self.assertEqual(self.handler_in(n.dump())["options"]["BinaryName"], self.SPECSHIM)
                if "\r" in original:
                    self.assertNotIn(b"\n", read(cfg).replace(b"\r\n", b""), "CRLF throughout")
                n.run("--handler", "runc")
                n.run("--uninstall")
                self.assertEqual(read(cfg), original.encode())

    def test_v2_new_binary_path_rewrites_the_line_and_uninstall_still_restores(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, NCT_V2_CONFIG)
        n.run("--handler", "runc")
        n.run("--handler", "runc", "--binary-path", "/opt/specshim/bin/specshim")
        self.assertEqual(n.restarts(), 2)
        self.assertEqual(self.handler_in(n.dump())["options"]["BinaryName"], "/opt/specshim/bin/specshim")
        self.assertIn(f'was "{self.NCT}"', read(cfg).decode())
        n.run("--uninstall")
        self.assertEqual(read(cfg), NCT_V2_CONFIG.encode())

    def test_v2_uninstall_keeps_later_admin_edits(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, NCT_V2_CONFIG)
        n.run("--handler", "runc")
        edited = read(cfg).decode().replace('sandbox_image = "registry.k8s.io/pause:3.9"',
                                            'sandbox_image = "registry.k8s.io/pause:3.10"')
        edited += '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gvisor]\n  runtime_type = "io.containerd.runsc.v1"\n'
        write(cfg, edited)
        n.run("--uninstall")
        self.assertEqual(read(cfg).decode(), NCT_V2_CONFIG.replace("pause:3.9", "pause:3.10") +
                         '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gvisor]\n  runtime_type = "io.containerd.runsc.v1"\n')

    def test_v2_binaryname_changed_since_is_kept_and_reinstall_refused(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, NCT_V2_CONFIG)
        n.run("--handler", "runc")
        changed = re.sub(r'BinaryName = .*', 'BinaryName = "/usr/local/bin/other-wrapper"', read(cfg).decode())
        write(cfg, changed)
        before = self.snapshot()
        r = n.run("--handler", "runc", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("it was changed since", r.stderr)
        self.assertIn("--uninstall", r.stderr)
        self.assert_untouched(before, restarts=1)
        r = n.run("--uninstall")
        self.assertIn("keeping the BinaryName of the handler `runc`", r.stdout)
        self.assertIn(f'it was "{self.NCT}"', r.stdout)
        self.assertEqual(read(cfg).decode(), changed)

    def test_v2_binaryname_already_specshim_is_left_alone(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = NCT_V2_CONFIG.replace(self.NCT, self.SPECSHIM)
        write(cfg, original)
        r = n.run("--handler", "runc")
        self.assertIn("not set by install-on-host.sh", r.stdout)
        self.assertEqual(n.restarts(), 0)
        self.assertEqual(n.backups(), [])
        n.run("--uninstall")
        self.assertEqual(read(cfg), original.encode())

    # ---- containerd 2.x (config version 3): a drop-in of BinaryName alone ----

    def test_v3_seed_002_ack_node(self):
        """ACK: NCT, by its bare name, is the default handler's BinaryName."""
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, ACK_V3_CONFIG)
        r = n.run(env={"SPECSHIM_HANDLER": "runc"})
        self.assertIn('BinaryName "nvidia-container-runtime" replaced by', r.stdout)
        self.assertEqual(n.restarts(), 1)
        self.assertEqual(read(cfg).decode(), 'imports = ["/etc/containerd/conf.d/specshim.toml"]\n' + ACK_V3_CONFIG,
                         "the root gains its imports line, nothing else")
        dropin = tomllib.loads(read(n.path("/etc/containerd/conf.d/specshim.toml")).decode())
        self.assertEqual(dropin["version"], 3, "the drop-in has the root's version")
        self.assertEqual(dropin["plugins"], {"io.containerd.cri.v1.runtime": {"containerd": {"runtimes": {
            "runc": {"options": {"BinaryName": self.SPECSHIM}}}}}}, "BinaryName and nothing else")

        dump = n.dump(tier="2")
        runc = self.handler_in(dump)
        self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM, "the drop-in wins over the root")
        self.assertEqual(runc["options"]["Root"], "/run/containerd/runc")
        self.assertIs(runc["options"]["SystemdCgroup"], True)
        self.assertEqual(runc["runtime_type"], "io.containerd.runc.v2")
        self.assertEqual(runc["pod_annotations"], ["io.kubernetes.cri.rdt-class"])
        cri = cri_runtime(dump)
        self.assertNotIn("specshim", cri["containerd"]["runtimes"])
        self.assertIs(cri["enable_cdi"], True)
        self.assertEqual(cri["cni"]["bin_dir"], "/opt/cni/bin")
        self.assertEqual(sandbox_image(dump), "registry-cn-hangzhou-vpc.ack.aliyuncs.com/acs/pause:3.10")
        self.assertEqual(dump["plugins"]["io.containerd.cri.v1.images"]["registry"]["config_path"], "/etc/containerd/cert.d")

        installed = self.snapshot()
        n.run("--handler", "runc")
        self.assertEqual(self.snapshot(), installed)
        self.assertEqual(n.restarts(), 1)

        n.run("--uninstall")
        self.assertEqual(read(cfg), ACK_V3_CONFIG.encode())
        self.assertFalse(os.path.exists(n.path("/etc/containerd/conf.d")))
        self.assertEqual(n.restarts(), 2)
        self.assertEqual(self.handler_in(n.dump(tier="2"))["options"]["BinaryName"], "nvidia-container-runtime")

    def test_v3_chain_finds_a_bare_binaryname_on_containerds_path(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, ACK_V3_CONFIG)
        before = self.snapshot()
        r = n.run("--handler", "runc", env={"SPECSHIM_CHAIN": "1"}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("`nvidia-container-runtime` (the handler's BinaryName) is in none of containerd's PATH", r.stderr)
        self.assert_untouched(before)

        write(n.path(self.NCT), "#!/bin/sh\n", 0o755)  # NCT, as ACK installs it
        r = n.run("--handler", "runc", env={"SPECSHIM_CHAIN": "1"})
        self.assertIn(f"which runs {self.NCT} in place of runc", r.stdout)
        conf = n.path("/etc/specshim/config.toml")
        self.assertEqual(tomllib.loads(read(conf).decode())["runtime"]["path"], self.NCT)
        self.assertTrue(self.doctor_config(conf)["findings"][0]["text"].endswith(": valid"))
        self.assertEqual(self.handler_in(n.dump(tier="2"))["options"]["BinaryName"], self.SPECSHIM)
        n.run("--handler", "runc", "--chain")
        self.assertEqual(n.restarts(), 1)
        n.run("--uninstall")
        self.assertEqual(read(cfg), ACK_V3_CONFIG.encode())
        self.assertFalse(os.path.exists(conf))

    def test_v3_without_a_runc_table_the_dropin_states_runtime_type(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, V3_CONFIG)
        n.run("--handler", "runc")
        dropin = tomllib.loads(read(n.path("/etc/containerd/conf.d/specshim.toml")).decode())
        runc = dropin["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"]
        self.assertEqual(runc, {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": self.SPECSHIM}})
        dump = n.dump(tier="2")
        self.assertEqual(self.handler_in(dump)["options"]["BinaryName"], self.SPECSHIM)
        self.assertEqual(dump["plugins"]["io.containerd.cri.v1.images"]["snapshotter"], "overlayfs")
        n.run("--uninstall")
        self.assertEqual(read(cfg), V3_CONFIG.encode())

    def test_v3_existing_imports_are_kept_and_merged(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        original = 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n' + ACK_V3_CONFIG.split("\n", 1)[1]
        write(cfg, original)
        site = ('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
                '  privileged_without_host_devices = true\n')
        write(n.path("/etc/containerd/conf.d/10-site.toml"), site)
        n.run("--handler", "runc")
        self.assertEqual(read(cfg), original.encode(), "the glob already imports the drop-in")
        runc = self.handler_in(n.dump(tier="2"))
        self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM)
        self.assertIs(runc["privileged_without_host_devices"], True)
        self.assertIs(runc["options"]["SystemdCgroup"], True)
        n.run("--uninstall")
        self.assertEqual(n.files(), ["etc/containerd/conf.d/10-site.toml", "etc/containerd/config.toml"])

    # ---- --chain and an existing /etc/specshim/config.toml ------------------

    def test_chain_never_overwrites_an_existing_config_it_says_what_to_set(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        write(cfg, NCT_V2_CONFIG)
        conf = n.path("/etc/specshim/config.toml")
        write(conf, '[log]\nlevel = "debug"\n')
        before = self.snapshot()
        r = n.run("--handler", "runc", "--chain", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("never overwrites it", r.stderr)
        self.assertIn(f'set path = "{self.NCT}" in its [runtime] table', r.stderr)
        self.assert_untouched(before)

        write(conf, f'[runtime]\npath = "{self.NCT}"\n\n[log]\nlevel = "debug"\n')
        r = n.run("--handler", "runc", "--chain")
        self.assertIn("runs /usr/bin/nvidia-container-runtime after specshim already", r.stdout)
        n.run("--uninstall")
        self.assertEqual(read(cfg), NCT_V2_CONFIG.encode())
        self.assertTrue(os.path.exists(conf), "the node's own config stays")

    # ---- switching between the two kinds of install ---------------------------

    def test_switching_handler_kind_is_refused_until_uninstall(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        for version, original in ((2, NCT_V2_CONFIG), (3, ACK_V3_CONFIG)):
            for first, second in ((["--handler", "specshim"], ["--handler", "runc"]), ([], ["--handler", "runc"]),
                                  (["--handler", "runc"], [])):
                with self.subTest(version=version, first=first, second=second):
                    write(cfg, original)
                    restarts = n.restarts()
                    n.run(*first)
                    before = self.snapshot()
                    r = n.run(*second, check=False)
                    self.assertNotEqual(r.returncode, 0)
                    self.assertIn("Switch in two steps: install-on-host.sh --uninstall", r.stderr)
                    self.assert_untouched(before, restarts=restarts + 1)
                    n.run("--uninstall")
                    n.run(*second)
                    self.assertEqual(self.handler_in(n.dump(tier="2"), "specshim" if not second else "runc")
                                     ["options"]["BinaryName"], self.SPECSHIM)
                    n.run("--uninstall")
                    self.assertEqual(read(cfg), original.encode())

    def test_handler_mode_refuses_specshims_handler_installed_without_state(self):
        n = self.node
        cfg = n.path("/etc/containerd/config.toml")
        for original in (NCT_V2_CONFIG, ACK_V3_CONFIG):
            with self.subTest(version=original[:11]):
                write(cfg, original)
                n.run()
                os.remove(n.path("/var/lib/specshim/install-state"))
                before = self.snapshot()
                r = n.run("--handler", "runc", check=False)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("run install-on-host.sh --uninstall first", r.stderr)
                self.assert_untouched(before, restarts=n.restarts())
                shutil.rmtree(n.root)
                os.makedirs(n.root)

    # ---- what --handler refuses, touching nothing -----------------------------

    def test_refusals_name_the_file_and_what_to_do(self):
        n = self.node
        runtimes2 = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
        cases = [
            ("inline table", DEBIAN_CONFIG + runtimes2 + '  runc = { runtime_type = "io.containerd.runc.v2" }\n',
             [], "/etc/containerd/config.toml line 11: `  runc = { runtime_type", "with an inline table"),
            ("inline options", SYSTEMD_CONFIG.split("    [plugins")[0] + '    options = { SystemdCgroup = true }\n',
             [], "line 6", "with an inline table"),
            ("dotted keys", DEBIAN_CONFIG + '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
             '  options.BinaryName = "/usr/bin/runc"\n', [], "line 11", "with dotted keys"),
            ("dotted keys v3", V3_CONFIG + '[plugins."io.containerd.cri.v1.runtime".containerd]\n'
             '  runtimes.runc.options.SystemdCgroup = true\n', [], "line 6", "with dotted keys"),
            ("dotted from the top", 'version = 3\nplugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.runtime_type = "x"\n',
             [], "line 2", "with dotted keys"),
            ("no such handler", DEBIAN_CONFIG, ["--handler", "nvidia"], "defines no handler `nvidia`", "leave --handler out"),
            ("not a runc shim", DEBIAN_CONFIG + '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gvisor]\n'
             '  runtime_type = "io.containerd.runsc.v1"\n', ["--handler", "gvisor"], 'runtime_type "io.containerd.runsc.v1"',
             "io.containerd.runc.v2 only"),
            ("escaped BinaryName", NCT_V2_CONFIG.replace(f'"{self.NCT}"', '"/usr/bin/nvidia\\u002dcontainer-runtime"'),
             [], "cannot read BinaryName", "without escapes"),
            ("v3 import sets BinaryName", ACK_V3_CONFIG.replace("version = 3\n", 'version = 3\nimports = ["site.toml"]\n'),
             [], "/etc/containerd/site.toml (imported by /etc/containerd/config.toml) line 3 sets the BinaryName",
             "Move that setting into /etc/containerd/config.toml"),
            ("v2 import sets CRI", DEBIAN_CONFIG.replace("version = 2\n", 'version = 2\nimports = ["/etc/containerd/site.toml"]\n'),
             [], "replaces the root's whole CRI table", "by hand"),
        ]
        for name, config, args, where, what in cases:
            with self.subTest(name):
                shutil.rmtree(n.root)
                write(n.path("/etc/containerd/config.toml"), config)
                if "import" in name:
                    write(n.path("/etc/containerd/site.toml"), '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
                          '  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]\n'
                          '    BinaryName = "/usr/bin/other"\n' if "v3" in name else
                          '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n')
                before = self.snapshot()
                r = n.run(*(args or ["--handler", "runc"]), check=False)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn(where, r.stderr)
                self.assertIn(what, r.stderr)
                self.assert_untouched(before)

    def test_handler_name_and_chain_arguments_are_checked(self):
        n = self.node
        write(n.path("/etc/containerd/config.toml"), NCT_V2_CONFIG)
        for args, message in ((["--handler", "ru nc"], "TOML bare key"), (["--handler", "a.b"], "TOML bare key"),
                              (["--handler", '"runc"'], "TOML bare key"), (["--handler", ""], "--handler"),
                              (["--chain"], "--chain goes with --handler"),
                              (["--handler", "runc"], "SPECSHIM_CHAIN is 0 or 1")):
            with self.subTest(args=args):
                r = n.run(*args, env={"SPECSHIM_CHAIN": "yes"} if "SPECSHIM_CHAIN" in message else None, check=False)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(message, r.stderr)
        self.assertEqual(n.files(), ["etc/containerd/config.toml"])

    def test_daemonset_handler_env_once_uncommented_is_what_the_installer_reads(self):
        import yaml
        with open(os.path.join(SOURCE_DIR, "packaging", "kubernetes", "daemonset.yaml")) as f:
            text = f.read()
        uncommented, entries = re.subn(r"^( +)# (- name: SPECSHIM_(?:HANDLER|CHAIN)\n)\1# ( +value: .*)$",
                                       r"\1\2\1\3", text, flags=re.M)
        self.assertEqual(entries, 2, "daemonset.yaml has SPECSHIM_HANDLER and SPECSHIM_CHAIN commented out")
        [ds] = [d for d in yaml.safe_load_all(uncommented) if d and d["kind"] == "DaemonSet"]
        [c] = ds["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in c["env"]}
        self.assertEqual((env["SPECSHIM_HANDLER"], env["SPECSHIM_CHAIN"]), ("runc", "1"))
        n = self.node
        write(n.path("/etc/containerd/config.toml"), NCT_V2_CONFIG)
        n.run(env={k: v for k, v in env.items() if k in ("SPECSHIM_HANDLER", "SPECSHIM_CHAIN")})
        self.assertEqual(tomllib.loads(read(n.path("/etc/specshim/config.toml")).decode())["runtime"]["path"], self.NCT)
        self.assertEqual(self.handler_in(n.dump())["options"]["BinaryName"], self.SPECSHIM)

    def test_containerd_binaries_are_there(self):
        """The 1.7 and 2.x tiers must be present: a missing one is a failure, not a skip."""
        for tier in ("1.6", "1.7", "2"):
            with self.subTest(tier=tier):
                r = subprocess.run([containerd_binary(tier), "--version"], capture_output=True, text=True)
                self.assertIn("containerd", r.stdout)


FIXTURES = ""  # test/packaging/fixtures


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def dropin_version(text):
    return tomllib.loads(text.decode() if isinstance(text, bytes) else text)["version"]


class NodeFilesCase(NodeCase):
    SPECSHIM = "/usr/local/bin/specshim"
    NCT = "/usr/bin/nvidia-container-runtime"
    CFG = "/etc/containerd/config.toml"
    DROPIN = "/etc/containerd/conf.d/specshim.toml"

    def snapshot(self):
        n = self.node
        return {f: read(n.path("/" + f)) for f in n.files()}

    def assert_untouched(self, before, restarts=0, backups=False):
        """Every file as before, no file more (backups=True: but the timestamped
        backups of the edits made and undone)."""
        n = self.node
        now = [f for f in self.snapshot() if not (backups and ".specshim-backup." in f)]
        self.assertEqual(sorted(now), sorted(before), "the same files, no more, no fewer")
        for f, data in before.items():
            self.assertEqual(read(n.path("/" + f)), data, f)
        self.assertEqual(n.restarts(), restarts)

    def state(self):
        with open(self.node.path("/var/lib/specshim/install-state")) as f:
            return dict(line.split("=", 1) for line in f.read().splitlines())

    def dropin(self):
        return tomllib.loads(read(self.node.path(self.DROPIN)).decode())

    def install_fixture(self, name, dest=None):
        """A fixture file or tree, installed on the node as it lies under test/packaging/fixtures."""
        src = os.path.join(FIXTURES, name)
        if os.path.isdir(src):
            shutil.copytree(src, self.node.root, dirs_exist_ok=True)
        else:
            write(self.node.path(dest), read(src))
        return self.snapshot()


class V4Test(NodeFilesCase):
    """containerd 2.3 (config version 4), on a root copied from its `config default`
    (fixtures/containerd-2.3-config-default.toml).

    How version 4 results are checked without a containerd 2.3: each result is
    parsed with tomllib and its tables asserted exactly (the drop-in is `version =
    4` and holds the same CRI runtime tables as version 3, which is what 2.3's own
    default writes under `version = 4`); containerd 2.1 is shown to refuse the
    version 4 root ("got `4`"), and then loads a copy of the node's
    /etc/containerd whose `version = 4` lines say 3 (Node.dump(as_version=3)),
    every other byte as installed, to show how containerd merges the drop-in over
    the root."""

    HANDLER_TABLE = ("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes")

    def test_new_handler_under_the_default_glob_leaves_the_root_alone(self):
        n = self.node
        before = self.install_fixture("containerd-2.3-config-default.toml", self.CFG)
        r = n.run()
        self.assertIn("imports the drop-in already (\"/etc/containerd/conf.d/*.toml\"); its bytes stay", r.stdout)
        self.assertEqual(read(n.path(self.CFG)), before["etc/containerd/config.toml"], "the root keeps every byte")
        self.assertEqual(n.backups(), [], "nothing of the root was edited, nothing backed up")
        dropin = self.dropin()
        self.assertEqual(dropin["version"], 4, "the drop-in has the root's version")
        self.assertEqual(list(dropin["plugins"]), ["io.containerd.cri.v1.runtime"])
        handler = dropin["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["specshim"]
        self.assertEqual(handler["runtime_type"], "io.containerd.runc.v2")
        self.assertEqual(handler["options"], {"BinaryName": self.SPECSHIM})
        state = self.state()
        self.assertEqual((state["config_version"], state["imports_edit"], state["dropin_imported_by"]),
                         ("4", "none", "/etc/containerd/conf.d/*.toml"))
        self.assertEqual(n.restarts(), 1)

        with self.assertRaisesRegex(AssertionError, "version equal to or less than `3`, got `4`"):
            n.dump(tier="2")
        dump = n.dump(tier="2", as_version=3)
        cri = cri_runtime(dump)
        self.assertEqual(cri["containerd"]["runtimes"]["specshim"]["options"]["BinaryName"], self.SPECSHIM)
        self.assertEqual(cri["containerd"]["runtimes"]["runc"]["runtime_type"], "io.containerd.runc.v2")
        self.assertEqual(sandbox_image(dump), "registry.k8s.io/pause:3.10.2", "the root's settings stay")
        self.assertEqual(dump["plugins"]["io.containerd.server.v1.grpc"]["address"], "/run/containerd/containerd.sock")

        installed = self.snapshot()
        n.run()
        self.assertEqual(self.snapshot(), installed)
        self.assertEqual(n.restarts(), 1)
        n.run("--uninstall")
        self.assert_untouched(before, restarts=2)

    def test_handler_runc_sets_binaryname_alone_at_version_4(self):
        n = self.node
        before = self.install_fixture("containerd-2.3-config-default.toml", self.CFG)
        n.run("--handler", "runc")
        self.assertEqual(read(n.path(self.CFG)), before["etc/containerd/config.toml"])
        self.assertEqual(self.dropin(), {"version": 4, "plugins": {"io.containerd.cri.v1.runtime": {"containerd": {
            "runtimes": {"runc": {"options": {"BinaryName": self.SPECSHIM}}}}}}})
        runc = cri_runtime(n.dump(tier="2", as_version=3))["containerd"]["runtimes"]["runc"]
        self.assertEqual(runc["options"]["BinaryName"], self.SPECSHIM)
        self.assertEqual(runc["sandboxer"], "podsandbox", "the root's handler settings stay")
        self.assertIs(runc["options"]["SystemdCgroup"], False)
        n.run("--uninstall")
        self.assert_untouched(before, restarts=2)

    def test_an_existing_conf_d_keeps_its_files(self):
        n = self.node
        self.install_fixture("containerd-2.3-config-default.toml", self.CFG)
        write(n.path("/etc/containerd/conf.d/10-site.toml"),
              "version = 4\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = 'registry.example/pause:3.10'\n")
        before = self.snapshot()
        n.run("--handler", "runc")
        dump = n.dump(tier="2", as_version=3)
        self.assertEqual(sandbox_image(dump), "registry.example/pause:3.10")
        self.assertEqual(cri_runtime(dump)["containerd"]["runtimes"]["runc"]["options"]["BinaryName"], self.SPECSHIM)
        self.assertEqual(self.state()["dropin_dir_created"], "0")
        n.run("--uninstall")
        self.assert_untouched(before, restarts=2)

    def test_without_a_config_file_the_version_comes_from_containerd(self):
        n = self.node
        for release, version in (("v2.3.4", 4), ("v2.2.1", 3), ("2.3.0", 4), ("v2.0.2", 3)):
            with self.subTest(release=release):
                n.run(env={"SPECSHIM_CONTAINERD_VERSION_CMD":
                           f"echo containerd github.com/containerd/containerd/v2 {release} c507a0257ea"})
                self.assertEqual(tomllib.loads(read(n.path(self.CFG)).decode()),
                                 {"version": version, "imports": [self.DROPIN]})
                self.assertEqual(self.dropin()["version"], version)
                n.run("--uninstall")
                self.assertEqual(n.files(), [])

    def test_config_version_argument(self):
        n = self.node
        n.run("--config-version", "4", "--handler", "runc", "--no-restart")
        self.assertEqual(tomllib.loads(read(n.path(self.CFG)).decode())["version"], 4)
        self.assertEqual(self.dropin()["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"],
                         {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": self.SPECSHIM}})
        n.run("--uninstall", "--no-restart")
        self.assertEqual(n.files(), [])
        write(n.path(self.CFG), V3_CONFIG)
        r = n.run("--config-version", "4", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/etc/containerd/config.toml says version = 3 and --config-version says 4", r.stderr)
        self.assertEqual(n.files(), ["etc/containerd/config.toml"])
        r = n.run("--config-version", "5", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--config-version is 2 (containerd 1.6/1.7), 3 (2.0-2.2) or 4 (2.3 and later), not `5`", r.stderr)

    def test_an_imported_file_of_a_higher_version_is_refused(self):
        n = self.node
        cases = [
            ("v3 root, another agent's v4 drop-in", 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
             "/etc/containerd/conf.d/99-agent.toml", "version = 4\n", 4, 3, []),
            ("v2 root, a v3 import", 'version = 2\nimports = ["/etc/containerd/site.toml"]\n',
             "/etc/containerd/site.toml", "version = 3\n", 3, 2, ["--handler", "runc"]),
            ("v3 root, relative glob", "version = 3\nimports = ['conf.d/*.toml']\n",
             "/etc/containerd/conf.d/nvidia.toml", "# written by an agent\nversion = 4\n[plugins]\n", 4, 3, ["--handler", "runc"]),
        ]
        for name, root, other, content, high, low, args in cases:
            with self.subTest(name):
                shutil.rmtree(n.root)
                os.makedirs(n.root)
                write(n.path(self.CFG), root)
                write(n.path(other), content)
                before = self.snapshot()
                r = n.run(*args, check=False)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(f"{other} (imported by /etc/containerd/config.toml) is containerd config version {high}, "
                              f"higher than the root config's version {low}", r.stderr)
                self.assertIn(f"drop-in config version {high} higher than root config version {low}", r.stderr)
                self.assert_untouched(before)


class CheckBeforeRestartTest(NodeFilesCase):
    """The node's containerd reads the changed files before any restart
    (SPECSHIM_CONTAINERD_CHECK_CMD stands for `chroot <host root> containerd`)."""

    def test_a_rejected_config_is_put_back_byte_for_byte(self):
        """containerd 2.1 on a node whose root says version 4: the real binary refuses it."""
        n = self.node
        before = self.install_fixture("containerd-2.3-config-default.toml", self.CFG)
        r = n.run(env={"SPECSHIM_CONTAINERD_CHECK_CMD": n.checker("2")}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the node's containerd rejects the changed configuration", r.stderr)
        self.assertIn("expected containerd config version equal to or less than `3`, got `4`", r.stderr,
                      "containerd's own error")
        self.assertIn("containerd was not restarted", r.stderr)
        self.assert_untouched(before)  # no drop-in, no conf.d, no binary, no state

    def test_a_rejected_edit_in_place_and_its_backup_go(self):
        n = self.node
        before = self.install_fixture("nvidia-ctk-v2")
        fake = os.path.join(self.tmp, "containerd")
        write(fake, '#!/bin/sh\n[ "$1" = --version ] && exec echo containerd 1.7.24\n'
              'echo \'containerd: failed to load TOML: invalid plugin key "x"\' >&2\nexit 1\n', 0o755)
        r = n.run("--handler", "nvidia", env={"SPECSHIM_CONTAINERD_CHECK_CMD": fake}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('containerd: failed to load TOML: invalid plugin key "x"', r.stderr)
        self.assertIn("backed up", r.stdout, "the edit had been made")
        self.assert_untouched(before)

    def test_an_accepted_config_is_checked_then_restarted(self):
        n = self.node
        write(n.path(self.CFG), ACK_V3_CONFIG)
        r = n.run("--handler", "runc", env={"SPECSHIM_CONTAINERD_CHECK_CMD": n.checker("2")})
        self.assertIn("the node's containerd reads the changed configuration", r.stdout)
        self.assertEqual(n.restarts(), 1)
        r = n.run("--handler", "runc", env={"SPECSHIM_CONTAINERD_CHECK_CMD": n.checker("2")})
        self.assertNotIn("reads the changed", r.stdout, "nothing changed, nothing to check")

    def test_a_containerd_that_cannot_run_is_one_line(self):
        n = self.node
        for env in ({"SPECSHIM_CONTAINERD_CHECK_CMD": os.path.join(self.tmp, "no-such-containerd")}, {}):
            with self.subTest(env=env):
                shutil.rmtree(n.root)
                os.makedirs(n.root)
                write(n.path(self.CFG), V3_CONFIG)
                restarts = n.restarts()
                r = n.run(env=env)  # {}: chroot into a node root without containerd
                lines = [line for line in r.stdout.splitlines() if "cannot run the node's containerd" in line]
                self.assertEqual(len(lines), 1, r.stdout)
                self.assertIn("is not checked before the restart", lines[0])
                self.assertEqual(n.restarts(), restarts + 1, "and the install goes on")


class ToolkitTest(NodeFilesCase):
    """--handler nvidia on nodes laid out exactly as `nvidia-ctk runtime configure
    --runtime=containerd --set-as-default` leaves them (fixtures/nvidia-ctk-v2, -v3;
    see fixtures/README.md): each result loaded by the real containerd of the
    matching line, each uninstall byte-exact."""

    def test_v2_in_place(self):
        n = self.node
        for chain in (False, True):
            with self.subTest(chain=chain):
                shutil.rmtree(n.root)
                os.makedirs(n.root)
                before = self.install_fixture("nvidia-ctk-v2")
                restarts = n.restarts()
                r = n.run("--handler", "nvidia", *(["--chain"] if chain else []))
                self.assertIn(f'BinaryName "{self.NCT}" replaced by {self.SPECSHIM}', r.stdout)
                self.assertNotIn("note: default_runtime_name", r.stdout, "pods without a RuntimeClass run nvidia")
                self.assertFalse(os.path.exists(n.path("/etc/containerd/conf.d")))
                conf = tomllib.loads(read(n.path("/etc/specshim/config.toml")).decode())
                self.assertEqual(conf.get("runtime", {}).get("path"), self.NCT if chain else None)
                for tier in ("1.6", "1.7", "2"):
                    cri = cri_runtime(n.dump(tier=tier))
                    runtimes = cri["containerd"]["runtimes"]
                    self.assertEqual(cri["containerd"]["default_runtime_name"], "nvidia", tier)
                    self.assertEqual(runtimes["nvidia"]["options"]["BinaryName"], self.SPECSHIM, tier)
                    self.assertIs(runtimes["nvidia"]["options"]["SystemdCgroup"], True, tier)
                    self.assertEqual(runtimes["nvidia"]["runtime_type"], "io.containerd.runc.v2", tier)
                    self.assertEqual(runtimes["runc"]["options"]["BinaryName"], "", "runc stays runc")
                n.run("--uninstall")
                self.assert_untouched(before, restarts=restarts + 2, backups=True)
                self.assertTrue(n.backups(), "backups of the edit and of the uninstall (one name when in the same second)")

    def test_v3_dropin_loaded_before_specshims(self):
        n = self.node
        for chain in (False, True):
            with self.subTest(chain=chain):
                shutil.rmtree(n.root)
                os.makedirs(n.root)
                before = self.install_fixture("nvidia-ctk-v3")
                restarts = n.restarts()
                r = n.run("--handler", "nvidia", *(["--chain"] if chain else []))
                self.assertIn(f'BinaryName "{self.NCT}" replaced by {self.SPECSHIM}', r.stdout)
                self.assertNotIn("note: default_runtime_name", r.stdout, "99-nvidia.toml makes nvidia the default")
                for f in ("etc/containerd/config.toml", "etc/containerd/conf.d/99-nvidia.toml"):
                    self.assertEqual(read(n.path("/" + f)), before[f], f)
                self.assertEqual(self.dropin(), {"version": 3, "plugins": {"io.containerd.cri.v1.runtime": {"containerd": {
                    "runtimes": {"nvidia": {"options": {"BinaryName": self.SPECSHIM}}}}}}})
                conf = tomllib.loads(read(n.path("/etc/specshim/config.toml")).decode())
                self.assertEqual(conf.get("runtime", {}).get("path"), self.NCT if chain else None)
                cri = cri_runtime(n.dump(tier="2"))
                nvidia = cri["containerd"]["runtimes"]["nvidia"]
                self.assertEqual(cri["containerd"]["default_runtime_name"], "nvidia")
                self.assertEqual(nvidia["options"]["BinaryName"], self.SPECSHIM, "specshim.toml loads after 99-nvidia.toml")
                self.assertIs(nvidia["options"]["SystemdCgroup"], True)
                self.assertEqual(nvidia["runtime_type"], "io.containerd.runc.v2")
                installed = self.snapshot()
                r = n.run("--handler", "nvidia", *(["--chain"] if chain else []))
                self.assertIn("no restart", r.stdout)
                self.assertEqual(self.snapshot(), installed)
                n.run("--uninstall")
                self.assert_untouched(before, restarts=restarts + 2)

    def test_v2_root_with_the_toolkits_dropin_is_refused(self):
        """Toolkit v1.18+ also writes conf.d/99-nvidia.toml under a version 2 root; containerd 1.x
        would replace the root's whole CRI table with it."""
        n = self.node
        self.install_fixture("nvidia-ctk-v3")
        cri2 = '"io.containerd.grpc.v1.cri"'
        for f in ("/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"):
            text = read(n.path(f)).decode().replace("version = 3", "version = 2")
            write(n.path(f), text.replace('"io.containerd.cri.v1.runtime"', cri2))
        before = self.snapshot()
        r = n.run("--handler", "nvidia", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/etc/containerd/conf.d/99-nvidia.toml (imported by /etc/containerd/config.toml) sets the CRI "
                      "plugin (io.containerd.grpc.v1.cri): containerd 1.x replaces the root's whole CRI table", r.stderr)
        self.assert_untouched(before)

    def test_v3_a_dropin_loaded_after_specshims_is_refused(self):
        n = self.node
        self.install_fixture("nvidia-ctk-v3")
        os.rename(n.path("/etc/containerd/conf.d/99-nvidia.toml"), n.path("/etc/containerd/conf.d/zz-nvidia.toml"))
        before = self.snapshot()
        r = n.run("--handler", "nvidia", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/etc/containerd/conf.d/zz-nvidia.toml (imported by /etc/containerd/config.toml) line 28 sets "
                      "the BinaryName of the handler `nvidia`, and containerd loads it after "
                      "/etc/containerd/conf.d/specshim.toml", r.stderr)
        self.assert_untouched(before)



if __name__ == "__main__":
    SOURCE_DIR, BUILD_DIR = sys.argv[1], sys.argv[2]
    FIXTURES = os.path.join(SOURCE_DIR, "test", "packaging", "fixtures")
    STAGE = stage_package()
    try:
        unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
    finally:
        shutil.rmtree(STAGE, ignore_errors=True)
