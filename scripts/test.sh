#!/usr/bin/env bash
# Runs every test tier: unit, golden, component, cli, integration (real runc),
# e2e (real containerd), plus the unit/golden/cli/component tiers again under
# ASan+UBSan and the fuzzers.
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

# One sanitized build (clang, ASan+UBSan, -O0) serves two phases: the unit,
# golden, cli and component tiers again, and the libFuzzer targets. Compiling
# the sanitized code once instead of twice (gcc for the tiers, clang for the
# fuzzers) saves a whole build of CI's time.
sanitize=ON fuzz=ON
[ "${SPECSHIM_SKIP_SANITIZE:-0}" = 1 ] && sanitize=OFF
[ "${SPECSHIM_SKIP_FUZZ:-0}" = 1 ] && fuzz=OFF
if [ "$sanitize" = ON ] || [ "$fuzz" = ON ]; then
  cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DSPECSHIM_SANITIZE="$sanitize" -DSPECSHIM_FUZZ="$fuzz" \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DSPECSHIM_FUZZ_SECONDS="${SPECSHIM_FUZZ_SECONDS:-30}" >/dev/null
  cmake --build build-san -j"$jobs"
  took "sanitizer build"
fi
if [ "$sanitize" = ON ]; then
  (cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --output-on-failure -j"$jobs" -L 'unit|golden|cli|component')
  took "sanitizer tests"
fi
if [ "$fuzz" = ON ]; then
  (cd build-san && ctest --output-on-failure -j"$jobs" -L fuzz)
  took "fuzzers"
fi
