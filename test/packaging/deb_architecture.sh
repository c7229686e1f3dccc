#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deb_architecture.sh DEB_DIR ARCH MACHINE [EMULATOR...]: checks that the .deb
# deb_pack.sh packed from this build tree into DEB_DIR is the target's: named
# specshim_<version>_ARCH.deb, Architecture: ARCH, its specshim an ELF for
# MACHINE (as `file` names it: "x86-64", "ARM aarch64") and statically
# linked, its specshim-kubelet helper for MACHINE too, and its specshim runs
# `--help` (through EMULATOR when given: qemu-aarch64-static in the arm64
# build, test/README.md).
set -eu
debs=$1 arch=$2 machine=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() {
  echo "deb_architecture: $*" >&2
  exit 1
}
deb=$(find "$debs" -maxdepth 1 -name 'specshim_*.deb')
case $deb in
  "$debs"/specshim_*_"$arch".deb) ;;
  *) fail "want one specshim_<version>_$arch.deb, cpack wrote: $(basename -a $deb 2>/dev/null | tr '\n' ' ')" ;;
esac
got=$(dpkg-deb -f "$deb" Architecture)
[ "$got" = "$arch" ] || fail "Architecture of $(basename "$deb") is \`$got\`, want \`$arch\`"
dpkg-deb -x "$deb" "$out/root"
what=$(file -b "$out/root/usr/bin/specshim")
echo "usr/bin/specshim: $what"
case $what in
  "ELF 64-bit LSB executable, $machine,"*"statically linked"*) ;;
  *) fail "usr/bin/specshim is not a static $machine executable" ;;
esac
helper=$(file -b "$out/root/usr/libexec/specshim/specshim-kubelet")
echo "usr/libexec/specshim/specshim-kubelet: $helper"
case $helper in
  "ELF 64-bit LSB "*", $machine,"*) ;;
  *) fail "usr/libexec/specshim/specshim-kubelet is not a $machine executable" ;;
esac
# --help prints specshim's own commands, then execs the runtime's help: true.
printf '[runtime]\npath = "/bin/true"\n' >"$out/config.toml"
help=$(SPECSHIM_CONFIG="$out/config.toml" "$@" "$out/root/usr/bin/specshim" --help)
case $help in
  "specshim "*"specshim's own commands"*"dry-run"*) echo "specshim --help ran${1:+ under $*}" ;;
  *) fail "specshim --help printed: $help" ;;
esac
# dockerd's `--gpus` finds specshim's stand-in for NVIDIA's hook: a relative
# link to the package's specshim, which runs as the hook (a stage other than
# prestart does nothing: exit 0).
hook=usr/libexec/specshim/docker/nvidia-container-runtime-hook
[ "$(readlink "$out/root/$hook")" = ../../../bin/specshim ] ||
  fail "$hook is not the link ../../../bin/specshim: $(ls -l "$out/root/$hook" 2>&1)"
"$@" "$out/root/$hook" poststart </dev/null || fail "$hook poststart failed"
echo "$hook -> ../../../bin/specshim"
