#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deb_postinst.sh DEB_DIR: the .deb's postinst, run as dpkg runs it with
# --root (DPKG_ROOT) over the package's own files: it finishes with the
# config the package ships, and refuses one its specshim cannot load, naming
# the line.
set -eu
debs=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() {
  echo "deb_postinst: $*" >&2
  exit 1
}
deb=$(find "$debs" -maxdepth 1 -name 'specshim_*.deb')
dpkg-deb -x "$deb" "$out/root"
dpkg-deb -e "$deb" "$out/control"
[ -x "$out/control/postinst" ] || fail "the package has no executable postinst"
DPKG_ROOT=$out/root sh "$out/control/postinst" configure || fail "postinst refused the shipped config"
printf '[no-such-table]\nkey = 1\n' >>"$out/root/etc/specshim/config.toml"
if DPKG_ROOT=$out/root sh "$out/control/postinst" configure 2>"$out/err"; then
  fail "postinst accepted a config that does not load"
fi
cat "$out/err"
grep -q 'unknown key `no-such-table`' "$out/err" || fail "the error does not name the key"
grep -q 'dpkg --configure -a' "$out/err" || fail "the error does not say how to finish"
# Other postinst actions (abort-upgrade and the like) check nothing.
DPKG_ROOT=$out/root sh "$out/control/postinst" abort-upgrade || fail "abort-upgrade failed"
echo "deb_postinst: ok"
