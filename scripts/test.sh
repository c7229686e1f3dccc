#!/usr/bin/env bash
# Runs every test tier: unit, golden, component, cli, integration (real runc),
# e2e (real containerd), plus the unit/golden/cli/component tiers again under
# ASan+UBSan and the fuzzers, then the unit/golden/cli tiers of the arm64
# build under qemu-user.
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

# Debug info at level 1 (line tables, function names: what a backtrace
# shows) instead of RelWithDebInfo's full -g: the same code (GCC's -g never
# changes what it generates), and less of the build's time spent writing
# DWARF for templates nobody steps through in CI.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
cmake --build build -j"$jobs"
took "build"
(cd build && ctest --output-on-failure -j"$jobs" "$@")
took "tests"

# One sanitized build (clang, ASan+UBSan, -O0, line tables: enough for the
# sanitizers' reports to name file and line) serves two phases: the unit,
# golden, cli and component tiers again, and the libFuzzer targets. Compiling
# the sanitized code once instead of twice (gcc for the tiers, clang for the
# fuzzers) saves a whole build of CI's time.
sanitize=ON fuzz=ON
[ "${SPECSHIM_SKIP_SANITIZE:-0}" = 1 ] && sanitize=OFF
[ "${SPECSHIM_SKIP_FUZZ:-0}" = 1 ] && fuzz=OFF
if [ "$sanitize" = ON ] || [ "$fuzz" = ON ]; then
  cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DSPECSHIM_SANITIZE="$sanitize" -DSPECSHIM_FUZZ="$fuzz" \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only \
    -DSPECSHIM_FUZZ_SECONDS="${SPECSHIM_FUZZ_SECONDS:-30}" -DSPECSHIM_VERIFY_HEADERS=OFF >/dev/null
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

# arm64: the same sources cross-built with Debian's aarch64 toolchain
# (cmake/aarch64-linux-gnu.cmake), Release and only what the unit, golden and
# cli tiers need (SPECSHIM_FAST_TIERS_ONLY), then those tiers run under
# qemu-aarch64-static. Tests that need what qemu-user does not emulate are
# disabled there, each with its reason, and run on amd64 above
# (test/qemu-user-excluded.cmake; test/README.md, "arm64").
if [ "${SPECSHIM_SKIP_ARM64:-0}" != 1 ]; then
  cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
    -DSPECSHIM_FAST_TIERS_ONLY=ON -DSPECSHIM_VERIFY_HEADERS=OFF >/dev/null
  cmake --build build-arm64 -j"$jobs"
  took "arm64 build"
  (cd build-arm64 && ctest --output-on-failure -j"$jobs" -L 'unit|golden|cli')
  took "arm64 tests"
fi
