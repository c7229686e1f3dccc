#!/usr/bin/env bash
# Measures `specshim reconcile` over N running busybox containers (real runc,
# as root; default 20), each selected by id in the desired-state file with one
# c 1:11 node: the first pass (N attaches), then R no-change passes (the
# steady state of --watch: read the file, `runc list`, read each config.json
# and record, change nothing), and prints median and p90 of the no-change pass
# and its cost per container as a markdown table for docs/BENCHMARKS.md. Not a
# test: numbers depend on the machine and its load.
# Usage: sudo scripts/bench-reconcile.sh [build-dir]   (BENCH_CONTAINERS=N, BENCH_RUNS=R, default 20 and 30)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shim="$PWD/$build/shim/specshim"
[ -x "$shim" ] || { echo "build first: cmake --build $build --target specshim" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
if ! command -v runc >/dev/null || ! command -v jq >/dev/null; then echo "needs runc and jq" >&2; exit 1; fi
n=${BENCH_CONTAINERS:-20}
runs=${BENCH_RUNS:-30}
tmpfs_dir=/run
[ "$(stat -f -c %T /run)" = tmpfs ] || tmpfs_dir=/dev/shm
work=$(mktemp -d "$tmpfs_dir/specshim-bench-reconcile-XXXXXX")
ids=()
cleanup() {
  for id in "${ids[@]}"; do
    runc --root "$work/root" kill "$id" KILL 2>/dev/null || true
    runc --root "$work/root" delete --force "$id" 2>/dev/null || true
  done
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/root" "$work/template/rootfs/bin"
cp /bin/busybox "$work/template/rootfs/bin/busybox"
for a in sh sleep; do ln -s busybox "$work/template/rootfs/bin/$a"; done
runc spec --bundle "$work/template"
jq '.process.terminal = false | .process.args = ["/bin/sleep", "3600"]' "$work/template/config.json" \
  > "$work/template/config.tmp" && mv "$work/template/config.tmp" "$work/template/config.json"
mknod -m 0666 "$work/kmsg" c 1 11
printf '[runtime]\npath = "%s"\n' "$(command -v runc)" > "$work/specshim.toml"
echo "containers:" > "$work/hotplug.yaml"
for i in $(seq "$n"); do
  id="bench-reconcile-$$-$i"
  cp -a "$work/template" "$work/bundle-$i"
  runc --root "$work/root" run -d --bundle "$work/bundle-$i" "$id" >/dev/null 2>&1 </dev/null
  ids+=("$id")
  printf '  - id: %s\n    shared: true\n    devices: ["%s:/dev/kmsg-bench:rw"]\n' "$id" "$work/kmsg" >> "$work/hotplug.yaml"
done

reconcile() { "$shim" reconcile --root "$work/root" --config "$work/specshim.toml" --desired "$work/hotplug.yaml"; }
now() { date +%s%N; }
t0=$(now)
reconcile > "$work/first.out"
t1=$(now)
attached=$(grep -c ': attached /dev/kmsg-bench' "$work/first.out" || true)
[ "$attached" = "$n" ] || { echo "first pass attached $attached of $n" >&2; exit 1; }
: > "$work/pass.ns"
for _ in $(seq "$runs"); do
  a=$(now)
  out=$(reconcile)
  b=$(now)
  [ -z "$out" ] || { echo "a no-change pass changed something: $out" >&2; exit 1; }
  echo $((b - a)) >> "$work/pass.ns"
done

read -r pm pp < <(sort -n "$work/pass.ns" | awk '{v[NR] = $1} END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  p = v[int(NR * 0.9 + 0.999999)]
  printf "%.2f %.2f\n", m / 1e6, p / 1e6 }')
first=$(awk -v t="$((t1 - t0))" 'BEGIN {printf "%.1f", t / 1e6}')
per=$(awk -v m="$pm" -v n="$n" 'BEGIN {printf "%.2f", m / n}')
cgroup=v1
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then cgroup=v2; elif [ -d /sys/fs/cgroup/unified ]; then cgroup="v1 hybrid"; fi
echo "| \`specshim reconcile\`, $n containers ($runs runs, cgroup $cgroup, $(nproc) cores) | median | p90 | per container |"
echo "|---|---:|---:|---:|"
echo "| first pass: $n attaches | $first ms | | $(awk -v f="$first" -v n="$n" 'BEGIN {printf "%.2f", f / n}') ms |"
echo "| no-change pass | $pm ms | $pp ms | $per ms |"
