#!/usr/bin/env bash
# Measures what CDI injection costs a create: the real specshim binary execs
# the static exit-0 fake runtime (test/fakes/recording_runtime), against spec
# dirs of 50 files (NVIDIA-like specs: 8 devices, 40 library mounts, 3 hooks;
# even files YAML, odd ones JSON). Prints a markdown table of hyperfine medians
# for docs/cdi.md.
# Usage: scripts/bench-cdi.sh [build-dir]   (BENCH_RUNS=N to change the run count)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shim="$PWD/$build/shim/specshim"
fake="$PWD/$build/test/fakes/recording_runtime"
[ -x "$shim" ] && [ -x "$fake" ] || { echo "build first: cmake --build $build" >&2; exit 1; }
command -v hyperfine >/dev/null && command -v jq >/dev/null || { echo "needs hyperfine and jq" >&2; exit 1; }
runs=${BENCH_RUNS:-300}
work=$(mktemp -d /tmp/specshim-bench-cdi-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

source scripts/bench-cdi-specs.sh  # spec_yaml, spec_json, make_dir

# Distinct device names per file in the worst case, so no two files conflict.
worst_kinds=()
for i in $(seq 0 49); do worst_kinds+=("example.com/accel"); done
make_dir "$work/typical" "example.com/accel"
make_dir "$work/worst" "${worst_kinds[@]}"
# In the worst case every file has kind example.com/accel: rename devices so names stay unique.
for f in "$work"/worst/*; do
  n=$(basename "$f" | cut -c1-2)
  sed -i "s/\"\\([0-7]\\)\"/\"f${n}d\\1\"/g" "$f"
done
sed -i 's/"f00d\([0-7]\)"/"\1"/g' "$work"/worst/00-spec.yaml

bundle() {  # dir annotation
  mkdir -p "$1"
  jq -c --arg a "$2" 'if $a == "" then . else .annotations["cdi.k8s.io/bench"] = $a end' \
    test/bench/cri-config.json > "$1/config.orig"
  cp "$1/config.orig" "$1/config.json"
}
bundle "$work/none" ""
bundle "$work/two" "example.com/accel=0,example.com/accel=1"
bundle "$work/named" "example.com/accel=f07d1,example.com/accel=f30d2"
mkdir -p "$work/tiny"
printf 'cdiVersion: 0.5.0\nkind: example.com/accel\ndevices:\n- {name: "0", containerEdits: {env: [A=0]}}\n- {name: "1", containerEdits: {env: [A=1]}}\n' \
  > "$work/tiny/accel.yaml"
conf() {  # name dir
  printf '[runtime]\npath = "%s"\n\n[chain]\norder = ["cdi", "devices-cgroup"]\n\n[cdi]\nspec-dirs = ["%s"]\n' "$fake" "$2" \
    > "$work/$1.toml"
}
conf typical "$work/typical"
conf worst "$work/worst"
conf empty "$work/does-not-exist"
conf tiny "$work/tiny"

: > "$work/results.tsv"
bench() {  # name config prepare command
  local name=$1 cfg=$2 prep=$3; shift 3
  SPECSHIM_CONFIG="$cfg" hyperfine -N --warmup 20 --runs "$runs" ${prep:+--prepare "$prep"} \
    --export-json "$work/$name.json" "$@" >/dev/null 2>&1 || { echo "bench-cdi: case $name failed: $*" >&2; exit 1; }
  jq -r --arg n "$name" '.results[0] | "\($n)\t\(.median*1000)\t\(.stddev*1000)"' "$work/$name.json" >> "$work/results.tsv"
}
create() { echo "$shim --log $1/log.json --log-format json create --bundle $1 id"; }
restore="cp $work/two/config.orig $work/two/config.json"

# Sanity: the typical case injects, and only the kind's file is parsed.
"$shim" dry-run --config "$work/typical.toml" --bundle "$work/two" 2>/dev/null \
  | jq -e '[.linux.devices[].path] | index("/dev/accel0") and index("/dev/accel1")' >/dev/null || { echo "bench-cdi: injection did not happen" >&2; exit 1; }

bench fake "$work/empty.toml" "" "$fake state x"
bench no-request "$work/typical.toml" "" "$(create "$work/none")"
bench prepare-only "$work/typical.toml" "" "$restore"
bench tiny "$work/tiny.toml" "$restore" "$(create "$work/two")"
bench typical "$work/typical.toml" "$restore" "$(create "$work/two")"
bench named "$work/worst.toml" "cp $work/named/config.orig $work/named/config.json" "$(create "$work/named")"
bench worst "$work/worst.toml" "$restore" "$(create "$work/two")"

# Instructions of the same work without the exec and the write (dry-run),
# counted by callgrind: repeatable on a loaded machine, unlike wall time.
instructions() {  # config bundle
  if ! command -v valgrind >/dev/null; then echo "n/a"; return; fi
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$shim" dry-run --config "$1" --bundle "$2" 2>&1 >/dev/null |
    awk '/Collected/ {printf "%.1f M", $4 / 1e6}'
}
ir_none=$(instructions "$work/typical.toml" "$work/none")
ir_tiny=$(instructions "$work/tiny.toml" "$work/two")
ir_typical=$(instructions "$work/typical.toml" "$work/two")
ir_named=$(instructions "$work/worst.toml" "$work/named")
ir_worst=$(instructions "$work/worst.toml" "$work/two")

med() { awk -F'\t' -v n="$1" '$1==n {printf "%.3f", $2}' "$work/results.tsv"; }
sd() { awk -F'\t' -v n="$1" '$1==n {printf "%.3f", $3}' "$work/results.tsv"; }
over() { awk -v a="$(med "$1")" -v b="$(med "$2")" 'BEGIN {printf "%+.3f", a-b}'; }
size=$(du -sk "$work/typical" | cut -f1)
echo "50 spec files ($size KiB), 2 devices requested, median of $runs runs, $(nproc) cores, $(uname -r):"
echo
echo "| case | median ms | stddev ms | over fake runtime | instructions (dry-run) |"
echo "|---|---|---|---|---|"
echo "| fake runtime alone | $(med fake) | $(sd fake) | +0.000 ms | |"
echo "| prepare-only (cp config.json) | $(med prepare-only) | $(sd prepare-only) | $(over prepare-only fake) ms | |"
echo "| create, no CDI request | $(med no-request) | $(sd no-request) | $(over no-request fake) ms | $ir_none |"
echo "| create, 2 devices (one env each) from a 1-file dir | $(med tiny) | $(sd tiny) | $(over tiny fake) ms | $ir_tiny |"
echo "| create, 2 devices, 1 of 50 files has the kind | $(med typical) | $(sd typical) | $(over typical fake) ms | $ir_typical |"
echo "| create, 2 devices by unique name, all 50 files have the kind | $(med named) | $(sd named) | $(over named fake) ms | $ir_named |"
echo "| create, 2 devices named 0 and 1, all 50 files have the kind (all parsed) | $(med worst) | $(sd worst) | $(over worst fake) ms | $ir_worst |"
