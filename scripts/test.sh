#!/usr/bin/env bash
# Runs every test tier: unit, golden, component, cli, integration (real runc),
# e2e (real containerd), plus the unit/golden/cli tiers again under ASan+UBSan.
# Needs root for integration and e2e (CI runs as root). Extra args go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
# took PHASE: how long the phase just done took, for keeping CI's time in view.
start=$SECONDS
took() {
  echo "test.sh: $1 took $((SECONDS - start)) s"
  start=$SECONDS
}

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
took "build"
(cd build && ctest --output-on-failure -j"$jobs" "$@")
took "tests"

if [ "${SPECSHIM_SKIP_SANITIZE:-0}" != 1 ]; then
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSPECSHIM_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$jobs"
  took "sanitizer build"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --output-on-failure -j"$jobs" -L 'unit|golden|cli|component')
  took "sanitizer tests"
fi

if [ "${SPECSHIM_SKIP_FUZZ:-0}" != 1 ]; then
  cmake -S . -B build-fuzz -DSPECSHIM_FUZZ=ON -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DSPECSHIM_FUZZ_SECONDS="${SPECSHIM_FUZZ_SECONDS:-30}" >/dev/null
  cmake --build build-fuzz -j"$jobs"
  took "fuzz build"
  (cd build-fuzz && ctest --output-on-failure -j"$jobs" -L fuzz)
  took "fuzzers"
fi
