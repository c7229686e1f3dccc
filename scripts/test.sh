#!/usr/bin/env bash
# Runs every test tier: unit, golden, component, cli, integration (real runc),
# e2e (real containerd), plus the unit/golden/cli tiers again under ASan+UBSan.
# Needs root for integration and e2e (CI runs as root). Extra args go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" "$@")

if [ "${SPECSHIM_SKIP_SANITIZE:-0}" != 1 ]; then
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSPECSHIM_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$jobs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --output-on-failure -j"$jobs" -L 'unit|golden|cli|component')
fi

if [ "${SPECSHIM_SKIP_FUZZ:-0}" != 1 ]; then
  cmake -S . -B build-fuzz -DSPECSHIM_FUZZ=ON -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DSPECSHIM_FUZZ_SECONDS="${SPECSHIM_FUZZ_SECONDS:-30}" >/dev/null
  cmake --build build-fuzz -j"$jobs"
  (cd build-fuzz && ctest --output-on-failure -j"$jobs" -L fuzz)
fi
