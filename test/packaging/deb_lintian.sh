#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deb_lintian.sh BUILD_DIR: packs this build tree's .deb into a temp dir and
# runs lintian on it; any error or warning fails (packaging/debian/
# specshim.lintian-overrides applies). Info-level tags are printed, not fatal.
set -eu
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! cpack --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1; then
  cat "$out/cpack.log"
  exit 1
fi
set -- "$out"/specshim_*.deb
dpkg-deb --info "$1"
lintian --fail-on error,warning --pedantic --display-info "$1"
# The examples ship: an Ascend node's config tables and CDI spec.
for f in examples/ascend/config.toml examples/ascend/ascend.yaml; do
  dpkg-deb --contents "$1" | grep -q "usr/share/doc/specshim/$f\$" || { echo "missing from the .deb: $f"; exit 1; }
done
