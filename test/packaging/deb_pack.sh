#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deb_pack.sh BUILD_DIR OUT_DIR: packs this build tree's .deb into OUT_DIR
# (emptied first), once for every test that reads it (the ctest fixture
# specshim_deb: cli:deb-architecture, cli:deb-lintian).
set -eu
build=$1 out=$2
rm -rf "$out"
mkdir -p "$out"
if ! cpack --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1; then
  cat "$out/cpack.log"
  exit 1
fi
ls "$out"/specshim_*.deb
