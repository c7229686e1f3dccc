#!/usr/bin/env bash
# bench-nri.sh [BUILD_DIR] [BENCH_ARGS...]: what specshim-nri adds to CRI CreateContainer.
# Builds specshim-nri-bench (with specshim-nri and the e2e busybox image) and runs it as root: one
# private containerd 2.x with NRI on (the e2e harness; scripts/fetch-containerd.sh or
# SPECSHIM_CONTAINERD_2_DIR), two pods on containerd's runc, and interleaved blocks of CRI
# CreateContainer calls with the plugin registered and without it (test/bench/nri_bench.cpp).
# Prints median and p90 per mode, the median of per-pair block differences (plugin − none), and
# CPU time per create, in ms, as markdown tables for docs/BENCHMARKS.md, with the load average
# before and after. Not a test: numbers depend on the machine and its load.
# Usage: sudo scripts/bench-nri.sh [build-dir] [--pairs N] [--per-block K] [--warmup W]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$1
  shift
fi
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
if ! out=$(cmake --build "$build" -j2 --target specshim-nri-bench 2>&1); then
  echo "$out" >&2
  exit 1
fi
echo "Load average (1/5/15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/test/bench/specshim-nri-bench" "$@"
echo
echo "Load average (1/5/15 min) after: $(cut -d' ' -f1-3 /proc/loadavg)"
