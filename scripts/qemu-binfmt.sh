#!/usr/bin/env bash
# Registers qemu-aarch64-static with the kernel's binfmt_misc, so that an
# aarch64 executable started by an aarch64 test under qemu-user (specshim, the
# recording runtime, the kubelet helper) runs too: qemu-user emulates one
# process and cannot follow its execve. The entry is Debian's own
# (/usr/lib/binfmt.d/qemu-aarch64.conf, package qemu-user-static), as
# systemd-binfmt would register it at boot; binfmt_misc is mounted when it is
# not. Idempotent; needs root. Run by scripts/install-deps.sh for the arm64
# tier (test/README.md, "arm64").
set -euo pipefail
dir=/proc/sys/fs/binfmt_misc
conf=/usr/lib/binfmt.d/qemu-aarch64.conf
[ -f "$conf" ] || { echo "qemu-binfmt: $conf missing (install qemu-user-static)" >&2; exit 1; }
if [ ! -e "$dir/register" ]; then
  mount -t binfmt_misc binfmt_misc "$dir"
fi
if [ ! -e "$dir/qemu-aarch64" ]; then
  cat "$conf" >"$dir/register"
fi
grep -qx enabled "$dir/qemu-aarch64" || { echo "qemu-binfmt: $dir/qemu-aarch64 is not enabled" >&2; exit 1; }
echo "qemu-binfmt: aarch64 executables run through $(sed -n 's/^interpreter //p' "$dir/qemu-aarch64")"
