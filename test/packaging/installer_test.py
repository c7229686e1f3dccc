#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""packaging/install-on-host.sh against fake node roots.

The installer's source root is the package layout staged by `cmake --install`
from the build tree, so these tests also check that the package carries what
the installer needs. Version 2 (containerd 1.x) results are loaded by the real
containerd (`containerd config dump`), which must keep the node's other CRI
settings: an `imports` drop-in would not.

usage: installer_test.py <source-dir> <build-dir> [unittest args]
"""
import os
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

    def dump(self, cfg="/etc/containerd/config.toml"):
        """The merged configuration as containerd 1.6 itself reads it."""
        r = subprocess.run(["containerd", "--config", self.path(cfg), "config", "dump"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"containerd rejected the config:\n{r.stderr}")
        return tomllib.loads(r.stdout)


def cri_v2(dump):
    return dump["plugins"]["io.containerd.grpc.v1.cri"]


class InstallerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="specshim-installer-")
        self.node = Node(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

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
        snippet = os.path.join(STAGE, "usr/share/specshim/containerd/containerd-1.x.toml")
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
        write(os.path.join(source, "usr/bin/specshim"), "#!/bin/sh\n# newer build\n", 0o755)
        n.source = source
        n.run()
        self.assertEqual(read(n.path("/usr/local/bin/specshim")), b"#!/bin/sh\n# newer build\n")
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


if __name__ == "__main__":
    SOURCE_DIR, BUILD_DIR = sys.argv[1], sys.argv[2]
    STAGE = stage_package()
    try:
        unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
    finally:
        shutil.rmtree(STAGE, ignore_errors=True)
