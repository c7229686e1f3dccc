#!/usr/bin/env bash
# Measures hot-plug latency: N `specshim attach --device` and `specshim detach
# --device` of a c 1:11 node on one running busybox container (real runc, as
# root), each timed alone, and prints the median and p90 of each as a
# markdown table for docs/BENCHMARKS.md. Not a test: numbers depend on the
# machine and its load.
# Usage: sudo scripts/bench-attach.sh [build-dir]   (BENCH_RUNS=N, default 50)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shim="$PWD/$build/shim/specshim"
[ -x "$shim" ] || { echo "build first: cmake --build $build --target specshim" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
if ! command -v runc >/dev/null || ! command -v jq >/dev/null; then echo "needs runc and jq" >&2; exit 1; fi
runs=${BENCH_RUNS:-50}
# The bundle lives where containerd keeps them, on tmpfs (/run/containerd/...).
tmpfs_dir=/run
[ "$(stat -f -c %T /run)" = tmpfs ] || tmpfs_dir=/dev/shm
work=$(mktemp -d "$tmpfs_dir/specshim-bench-attach-XXXXXX")
id="bench-attach-$$"
cleanup() {
  runc --root "$work/root" kill "$id" KILL 2>/dev/null || true
  runc --root "$work/root" delete --force "$id" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/bundle/rootfs/bin" "$work/root"
cp /bin/busybox "$work/bundle/rootfs/bin/busybox"
for a in sh sleep; do ln -s busybox "$work/bundle/rootfs/bin/$a"; done
runc spec --bundle "$work/bundle"
jq '.process.terminal = false | .process.args = ["/bin/sleep", "3600"]' "$work/bundle/config.json" \
  > "$work/bundle/config.tmp" && mv "$work/bundle/config.tmp" "$work/bundle/config.json"
mknod -m 0666 "$work/kmsg" c 1 11
printf '[runtime]\npath = "%s"\n' "$(command -v runc)" > "$work/specshim.toml"
runc --root "$work/root" run -d --bundle "$work/bundle" "$id" >/dev/null 2>&1 </dev/null

now() { date +%s%N; }
: > "$work/attach.ns"
: > "$work/detach.ns"
for _ in $(seq "$runs"); do
  t0=$(now)
  "$shim" attach --root "$work/root" --config "$work/specshim.toml" "$id" --device "$work/kmsg:/dev/kmsg-bench:rw" >/dev/null
  t1=$(now)
  "$shim" detach --root "$work/root" --config "$work/specshim.toml" "$id" --device /dev/kmsg-bench >/dev/null
  t2=$(now)
  echo $((t1 - t0)) >> "$work/attach.ns"
  echo $((t2 - t1)) >> "$work/detach.ns"
done

stats() {  # file -> "median p90" in ms
  sort -n "$1" | awk '{v[NR] = $1} END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    p = v[int(NR * 0.9 + 0.999999)]
    printf "%.2f %.2f\n", m / 1e6, p / 1e6 }'
}
read -r am ap < <(stats "$work/attach.ns")
read -r dm dp < <(stats "$work/detach.ns")
cgroup=v1
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then cgroup=v2; elif [ -d /sys/fs/cgroup/unified ]; then cgroup="v1 hybrid"; fi
echo "| verb ($runs runs, cgroup $cgroup, $(nproc) cores) | median | p90 |"
echo "|---|---:|---:|"
echo "| \`specshim attach --device\` | $am ms | $ap ms |"
echo "| \`specshim detach --device\` | $dm ms | $dp ms |"
