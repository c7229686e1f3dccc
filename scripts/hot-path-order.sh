#!/usr/bin/env bash
# Writes shim/startup/hot-path.order: the functions specshim runs on its hot path, in
# the order lld lays them out at the start of .text (--symbol-ordering-file).
# Packed together they are touched in a few fault-around windows instead of
# thirty-odd scattered over 4 MB of code (docs/BENCHMARKS.md, "Code layout").
#
# It is a reviewed profile, like the golden files: this script runs each case
# under callgrind up to the runtime's execve and lists every function that ran,
# case by case in the order below (the passthrough first), sorted by name within
# a case, so the file depends only on what runs. Rerun it when the hot
# path changes; `--check` (a ctest) warns when a function the hot path runs is
# missing from the file, and fails only when a tenth of them are (the file
# then no longer lays the hot path out).
#
# After the functions come the data symbols the same runs read or write
# (valgrind's lackey traces every access): lld orders .data, .bss and .rodata
# by the same file, so what start-up writes shares a few pages instead of
# faulting in ten (each first write to a page of .data copies it). --check
# leaves them alone: a missing one costs a page fault, not correctness.
# Usage: scripts/hot-path-order.sh [--check] [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
build=$(realpath "${1:-build}")
shim="$build/shim/specshim"
fake="$build/test/fakes/recording_runtime"
order=shim/startup/hot-path.order
[ -x "$shim" ] && [ -x "$fake" ] || { echo "hot-path-order: build first: cmake --build $build" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "hot-path-order: needs valgrind (scripts/install-deps.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench-cdi-specs.sh  # make_dir, spec_nvidia
source scripts/bench-bundles.sh    # make_bundle, cdi_bundle, nvidia_env_bundles: the benchmark's bundles

CDI_FILES=1 make_dir "$work/cdi-1" "example.com/accel"
make_dir "$work/cdi-50" "example.com/accel"
for c in plain cdi-1 cdi-50; do
  printf '[runtime]\npath = "%s"\n' "$fake" >"$work/$c.toml"
  [ "$c" = plain ] || printf '[cdi]\nspec-dirs = ["%s"]\ncache-dir = "%s"\n' "$work/$c" "$work/cache-$c" >>"$work/$c.toml"
done
devices="example.com/accel=0,example.com/accel=1"
make_bundle "$work/nochange" 0
make_bundle "$work/passwd" 10001
cdi_bundle "$work/cdi2" 0 "$devices"
cdi_bundle "$work/passwd-cdi2" 10001 "$devices"
nvidia_env_bundles "$work" "$fake" "cache-dir = \"$work/cache-nv\""

n=0
profile() {  # config argv...: the functions one run executes before its execve
  n=$((n + 1))
  SPECSHIM_CONFIG="$work/$1.toml" valgrind -q --tool=callgrind --dump-before=execve --demangle=no \
    --compress-strings=no --callgrind-out-file="$work/cg.$n" "$shim" "${@:2}" >/dev/null 2>"$work/err.$n" ||
    { echo "hot-path-order: run $n ($*) failed:" >&2; cat "$work/err.$n" >&2; exit 1; }
  # The dump before execve is cg.N.1; cg.N (what ran after it) stays empty.
  # Sorted by name within a case: callgrind lists functions in the binary's
  # own layout, so unsorted the file would change each time it is relinked.
  sed -n -E "s/^c?fn=//p" "$work/cg.$n.1" | sed -E "s/'[0-9]+$//" | grep -v -E '^0x|^\(below main\)$' |
    LC_ALL=C sort -u >>"$work/functions"
}
# data config argv...: the data symbols one run touches before its execve.
data() {
  [ "$check" = 1 ] && return 0
  SPECSHIM_CONFIG="$work/$1.toml" valgrind -q --tool=lackey --trace-mem=yes --log-file="$work/mem" \
    "$shim" "${@:2}" >/dev/null 2>&1 || { echo "hot-path-order: lackey run ($*) failed" >&2; exit 1; }
  nm -S --defined-only "$shim" | python3 -c '
import bisect, re, sys
syms = sorted((int(a, 16), int(n, 16), name) for a, n, t, name in
              (l.split() for l in sys.stdin if len(l.split()) == 4) if t in "bBdDrRuV")
starts = [s[0] for s in syms]
seen = set()
for line in open(sys.argv[1]):
    m = re.match(r" [LSM] ([0-9a-f]+),", line)
    if not m:
        continue
    a = int(m.group(1), 16)
    i = bisect.bisect_right(starts, a) - 1
    if i >= 0 and a < syms[i][0] + max(syms[i][1], 1):
        seen.add(syms[i][2])
print("\n".join(sorted(seen)))' "$work/mem" >>"$work/data"
}
create() {  # config bundle: a create's functions, then (from config.orig again) its data
  local argv=(--log "$work/log.json" --log-format json create --bundle "$work/$2" id)
  profile "$1" "${argv[@]}"
  cp "$work/$2/config.json" "$work/$2/config.after"
  cp "$work/$2/config.orig" "$work/$2/config.json"
  data "$1" "${argv[@]}"
  mv "$work/$2/config.after" "$work/$2/config.json"
}
: >"$work/functions"
: >"$work/data"
profile plain state id
data plain state id
create plain nochange
create plain passwd
create cdi-1 cdi2            # parse cache miss: parsed, stored
cp "$work/cdi2/config.orig" "$work/cdi2/config.json"
create cdi-1 cdi2            # cache hit
create cdi-50 passwd-cdi2    # 49 other vendors' files beside it
create nv nv-outside         # NVIDIA_VISIBLE_DEVICES, nvidia.com/gpu parsed and stored
cp "$work/nv-outside/config.orig" "$work/nv-outside/config.json"
create nv nv-outside         # cache hit, no grant to check
create nv nv-grant           # the grant read from the kubelet's checkpoint
profile plain --log "$work/log.json" --log-format json run --bundle "$work/nochange" id
echo execve >>"$work/functions"  # where each profile stops: the runtime's exec itself
# glibc's string functions come in variants (SSE2, AVX2, EVEX, AVX-512...),
# one picked by the CPU at start-up: valgrind's emulated CPU picks another
# than the host's. Each variant profiled stands for its whole family, so the
# one a node's CPU runs is packed with the rest (else each one it runs costs a
# 64 KiB fault-around window of its own: four of them on an AVX-512 host).
nm --defined-only "$shim" | awk '{print $3}' | grep -E '^__(mem|str|stp|rawmem)[a-z]*_' | LC_ALL=C sort -u \
  >"$work/variants"
python3 -c '
import re, sys
variants = [v.strip() for v in open(sys.argv[2])]
family = lambda name: re.match(r"(__[a-z]+)_", name).group(1)
seen = set()
for f in (l.strip() for l in open(sys.argv[1])):
    names = [f]
    if f in variants:
        names = [v for v in variants if family(v) == family(f)]
    for n in names:
        if n not in seen:
            seen.add(n)
            print(n)' "$work/functions" "$work/variants" >"$work/order"
data_header="# data the hot path touches, in layout order"
[ "$check" = 1 ] || { echo "$data_header"; awk '!seen[$0]++' "$work/data"; } >>"$work/order"

header="# specshim's hot path, in layout order: written by scripts/hot-path-order.sh, reviewed like a golden file."
if [ "$check" = 1 ]; then
  missing=$(grep -v '^#' "$order" | sort -u | comm -13 - <(sort -u "$work/order"))
  total=$(wc -l <"$work/order")
  if [ -n "$missing" ]; then
    count=$(wc -l <<<"$missing")
    # A few new functions cost a page fault or two until the file is
    # rewritten: a warning. A file that misses a tenth of the hot path no
    # longer lays it out at all: a failure.
    level=warning
    [ $((count * 10)) -gt "$total" ] && level=error
    echo "hot-path-order: $level: $count of the $total function(s) on the hot path are not in $order:" >&2
    head -20 <<<"$missing" >&2
    echo "rerun scripts/hot-path-order.sh and review the diff (docs/startup.md)" >&2
    [ "$level" = warning ] || exit 1
    exit 0
  fi
  echo "hot-path-order: all $total hot-path functions are in $order"
else
  { echo "$header"; cat "$work/order"; } >"$order"
  echo "hot-path-order: $(sed "/^$data_header/,\$d" "$work/order" | wc -l) functions and" \
    "$(sed "1,/^$data_header/d" "$work/order" | wc -l) data symbols written to $order"
fi
