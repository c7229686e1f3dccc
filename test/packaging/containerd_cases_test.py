#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""specshim containerd configure|check|unconfigure against the node trees of
test/packaging/cases/.

A case is a folder:
  args     the flags of `configure` (one line, split on blanks), beside
           --host-root, --source-root and --no-restart
  before/  the node's files before (a containerd root config, drop-ins)
  after/   the node's containerd files and specshim's state file after
           configure (etc/containerd/ and var/lib/specshim/), byte for byte

Each case checks, in turn: configure leaves after/; `check` then exits 0 and
changes nothing; configure again changes nothing; unconfigure gives back
before/ byte for byte (and removes the binaries and config it installed).
The package's own files (usr/, etc/specshim/) and the backups are not part of
after/: installer_test.py checks those.

SPECSHIM_UPDATE_CASES=1 writes after/ from what configure does instead of
comparing; review the diff before committing it.

usage: containerd_cases_test.py <source-dir> <build-dir>
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = BUILD_DIR = STAGE = ""
COMPARED = ("etc/containerd/", "var/lib/specshim/")


def tree(root, only=None):
    """relative path -> bytes of every file under root (only: path prefixes)."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if ".specshim-backup." in name:
                continue
            if only and not rel.startswith(only):
                continue
            with open(path, "rb") as f:
                out[rel] = f.read()
    return out


def write_tree(root, files):
    shutil.rmtree(root, ignore_errors=True)
    for rel, data in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


class Cases(unittest.TestCase):
    maxDiff = None

    def run_case(self, name):
        case = os.path.join(SOURCE_DIR, "test", "packaging", "cases", name)
        with open(os.path.join(case, "args")) as f:
            args = f.read().split()
        before = tree(os.path.join(case, "before"))
        tmp = tempfile.mkdtemp(prefix="specshim-case-")
        self.addCleanup(shutil.rmtree, tmp, True)
        root = os.path.join(tmp, "host")
        write_tree(root, before)
        binary = os.path.join(STAGE, "usr", "bin", "specshim")
        common = ["--host-root", root, "--source-root", STAGE]

        def verb(sub, *more):
            # the node's containerd cannot run here (no chroot): not checked
            extra = [] if sub == "unconfigure" else ["--check-cmd", "false"]
            extra += ["--no-restart"] if sub != "check" else []
            return subprocess.run([binary, "containerd", sub, *common, *extra, *more],
                                  capture_output=True, text=True)

        r = verb("configure", *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        got = tree(root, COMPARED)
        if os.environ.get("SPECSHIM_UPDATE_CASES") == "1":
            write_tree(os.path.join(case, "after"), got)
        want = tree(os.path.join(case, "after"))
        self.assertEqual({k: v.decode() for k, v in got.items()}, {k: v.decode() for k, v in want.items()},
                         f"{name}: configure")

        r = verb("check", *args)
        self.assertEqual(r.returncode, 0, f"{name}: check after configure\n{r.stdout}{r.stderr}")
        self.assertEqual(tree(root, COMPARED), got, f"{name}: check changed the node")
        r = verb("configure", *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("containerd configuration unchanged; no restart", r.stdout, name)
        self.assertEqual(tree(root, COMPARED), got, f"{name}: configure again")

        r = verb("unconfigure")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual({k: v.decode() for k, v in tree(root).items()},
                         {k: v.decode() for k, v in before.items()}, f"{name}: unconfigure")


def add_cases():
    cases = os.path.join(SOURCE_DIR, "test", "packaging", "cases")
    names = sorted(d for d in os.listdir(cases) if os.path.isdir(os.path.join(cases, d)))
    if not names:
        raise AssertionError(f"no cases in {cases}")
    for name in names:
        setattr(Cases, "test_" + name.replace("-", "_"), lambda self, n=name: self.run_case(n))


if __name__ == "__main__":
    SOURCE_DIR, BUILD_DIR = sys.argv[1], sys.argv[2]
    STAGE = tempfile.mkdtemp(prefix="specshim-stage-")
    try:
        subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", "/usr"], env=dict(os.environ, DESTDIR=STAGE),
                       check=True, stdout=subprocess.DEVNULL)
        add_cases()
        unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
    finally:
        shutil.rmtree(STAGE, ignore_errors=True)
