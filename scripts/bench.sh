#!/usr/bin/env bash
# Benchmarks specshim's whole-process cost with hyperfine and writes
# docs/BENCHMARKS.md. Every number is a median over many runs, compared in the
# same run against the static exit-0 fake runtime (test/fakes/recording_runtime)
# and against plain runc, and in interleaved pairs against the floor of any
# exec wrapper. Usage: scripts/bench.sh [--pairs | --against SPECSHIM] [build-dir]
#   --pairs             only the interleaved pairs, printed (docs/BENCHMARKS.md untouched)
#   --against SPECSHIM  the same pairs with another specshim binary (an older
#                       build) in the floor's place: what this build saves
set -euo pipefail
cd "$(dirname "$0")/.."
only_pairs=0 against=""
if [ "${1:-}" = --pairs ]; then only_pairs=1; shift; fi
if [ "${1:-}" = --against ]; then only_pairs=1 against=$(realpath "$2"); shift 2; fi
build=${1:-build}
shim="$PWD/$build/shim/specshim"
fake="$PWD/$build/test/fakes/recording_runtime"
[ -x "$shim" ] && [ -x "$fake" ] || { echo "build first: cmake --build $build" >&2; exit 1; }
runc=$(command -v runc)
out=${BENCH_OUT:-docs/BENCHMARKS.md}
load_before=$(cut -d" " -f1-3 /proc/loadavg)
# Bundles live where containerd keeps them, on tmpfs (/run/containerd/...):
# /run when it is tmpfs, else /dev/shm. One extra case puts a bundle on the
# disk to show what the write's fsyncs cost there.
tmpfs_dir=/run
[ "$(stat -f -c %T /run)" = tmpfs ] || tmpfs_dir=/dev/shm
work=$(mktemp -d "$tmpfs_dir/specshim-bench-XXXXXX")
disk=$(mktemp -d /var/tmp/specshim-bench-disk-XXXXXX)
trap 'rm -rf "$work" "$disk"' EXIT
runs=${BENCH_RUNS:-300}

source scripts/bench-bundles.sh  # make_bundle, cdi_bundle
make_bundle "$work/nochange" 0
make_bundle "$work/passwd" 10001
make_bundle "$disk/passwd" 10001
printf '[runtime]\npath = "%s"\n' "$fake" > "$work/fake.toml"
printf '[runtime]\npath = "%s"\n' "$runc" > "$work/runc.toml"
# The config the package installs (/etc/specshim/config.toml): 11 KiB, nearly
# all comments, read by every exec. Only the runtime is set, to the fake.
sed "s|^\[runtime\]\$|[runtime]\npath = \"$fake\"|" packaging/specshim.toml > "$work/shipped.toml"
extra_cases=() extra_rows=() extra_rss=() extra_sections=() extra_pairs=()
# create_cmd BUNDLE: the create command line containerd's shim would run, as one string for hyperfine.
# floor_cmd BUNDLE: the same command line through the floor wrapper (below).
create_cmd() { echo "$shim --log $1/log.json --log-format json create --bundle $1 id"; }
floor_cmd() { echo "$floor --log $1/log.json --log-format json create --bundle $1 id"; }
floor=${against:-$work/wrapper}  # what each pair's first half runs
# The floor of any exec wrapper: a static program that only execs the fake.
# specshim's own work is what it costs beyond this one extra execve.
printf '#include <unistd.h>\nint main(int c, char** v) { (void)c; execv("%s", v); return 127; }\n' "$fake" >"$work/wrapper.c"
cc -O2 -static -o "$work/wrapper" "$work/wrapper.c"
cc -O2 -o "$work/pairs" test/bench/pairs.c
[ -f scripts/bench-cases.sh ] && source scripts/bench-cases.sh   # more cases from other components

# Interleaved pairs (test/bench/pairs.c): each case against the floor wrapper
# with the same command line, alternating run by run in random order, so both
# halves of a pair see the same machine. The median of the per-pair
# differences is specshim's own cost; this VM's noise between runs minutes
# apart is larger than the budgets.
pairs_runs=${BENCH_PAIRS:-300}
: > "$work/pairs.tsv"
pair() {  # label config prepare floor-command command
  local line
  line=$(SPECSHIM_CONFIG="$2" "$work/pairs" "$pairs_runs" 20 "$3" "$4" "$5") ||
    { echo "bench: pairs for \"$1\" failed" >&2; cat "$work"/*/log.json 2>/dev/null | grep -h error | tail -2 >&2; exit 1; }
  printf '%s\t%s\n' "$1" "$line" >>"$work/pairs.tsv"
}
pair "passthrough (\`state\`)" "$work/fake.toml" "" "$floor state x" "$shim state x"
pair "passthrough (\`state\`), the shipped config file" "$work/shipped.toml" "" "$floor state x" "$shim state x"
pair "create, nothing to change" "$work/fake.toml" "" "$(floor_cmd "$work/nochange")" "$(create_cmd "$work/nochange")"
pair "create, passwd entry added" "$work/fake.toml" "cp $work/passwd/config.orig $work/passwd/config.json" \
  "$(floor_cmd "$work/passwd")" "$(create_cmd "$work/passwd")"
for c in "${extra_pairs[@]}"; do eval "$c"; done
against_table() {
  echo "## This build against \`$against\`, interleaved pairs"
  echo
  echo "Each case runs with the other build and with this one alternately, in random order, $pairs_runs pairs"
  echo "after 20 warm-up pairs (\`test/bench/pairs.c\`). The last column is the median of the per-pair"
  echo "differences (this build − the other), with the interquartile range."
  echo
  echo "| case | other build median ms | this build median ms | this − other, median (p25 – p75) |"
  echo "|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %.3f | %.3f | **%+.3f ms** (%+.3f – %+.3f) |\n", $1, $2, $3, $4, $5, $6}' "$work/pairs.tsv"
}
pairs_table() {
  echo "## Own cost, interleaved pairs against the floor"
  echo
  echo "Each case and the floor wrapper (a static program that only execs the fake: what every wrapper pays) run the same"
  echo "command line alternately, in random order, $pairs_runs pairs after 20 warm-up pairs (\`test/bench/pairs.c\`,"
  echo "timed fork to wait). The last column is the median of the per-pair differences, with the interquartile"
  echo "range: specshim's own cost, measured so that both halves of each pair see the same machine."
  echo
  echo "| case | floor median ms | specshim median ms | specshim − floor, median (p25 – p75) |"
  echo "|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %.3f | %.3f | **%+.3f ms** (%+.3f – %+.3f) |\n", $1, $2, $3, $4, $5, $6}' "$work/pairs.tsv"
}
extra_sections=(pairs_table "${extra_sections[@]}")
if [ -n "$against" ]; then against_table; exit 0; fi
if [ "$only_pairs" = 1 ]; then pairs_table; exit 0; fi

# hyperfine_case NAME CONFIG RUNS WARMUP PREPARE COMMAND...: one row of
# results.tsv; a failing command stops the script with hyperfine's output.
hyperfine_case() {
  local name=$1 cfg=$2 n=$3 warmup=$4 prep=$5; shift 5
  SPECSHIM_CONFIG="$cfg" hyperfine -N --warmup "$warmup" --runs "$n" ${prep:+--prepare "$prep"} \
    --export-json "$work/$name.json" "$@" >"$work/$name.out" 2>&1 ||
    { echo "bench: case $name failed:" >&2; tail -5 "$work/$name.out" >&2
      cat "$work"/*/log.json 2>/dev/null | grep -h error | tail -2 >&2; exit 1; }
  jq -r --arg n "$name" '.results[0] | "\($n)\t\(.median*1000)\t\(.stddev*1000)\t\(.min*1000)"' "$work/$name.json" >>"$work/results.tsv"
}
bench() { hyperfine_case "$1" "$2" "$runs" 20 "" "${@:3}"; }                 # name config command...
bench_prepared() { hyperfine_case "$1" "$2" "$runs" 20 "$3" "${@:4}"; }     # name config prepare command...
: > "$work/results.tsv"
bench fake "$work/fake.toml" "$fake state x"
bench wrapper "$work/fake.toml" "$work/wrapper state x"
bench passthrough "$work/fake.toml" "$shim state x"
bench create-nochange "$work/fake.toml" "$(create_cmd "$work/nochange")"
bench_prepared create-passwd "$work/fake.toml" "cp $work/passwd/config.orig $work/passwd/config.json" \
  "$(create_cmd "$work/passwd")"
bench prepare-only "$work/fake.toml" "cp $work/passwd/config.orig $work/passwd/config.json"
bench_prepared create-passwd-disk "$work/fake.toml" "cp $disk/passwd/config.orig $disk/passwd/config.json" \
  "$(create_cmd "$disk/passwd")"
for c in "${extra_cases[@]}"; do eval "$c"; done
bench runc-state "$work/runc.toml" -i "$runc --root $work/runc-root state nonexistent"
bench shim-runc-state "$work/runc.toml" -i "$shim --root $work/runc-root state nonexistent"

# Peak RSS (GNU time's %M, KiB) of one run of each case.
rss_rows=()
rss_row() {  # label config prepare command...
  local label=$1 cfg=$2 prep=$3; shift 3
  if [ -n "$prep" ]; then eval "$prep"; fi
  rss_rows+=("$label $(SPECSHIM_CONFIG="$cfg" /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1)")
}
rss_row "fake runtime alone" "$work/fake.toml" "" "$fake" state x
rss_row "passthrough" "$work/fake.toml" "" "$shim" state x
rss_row "create, nothing to change" "$work/fake.toml" "" "$shim" create --bundle "$work/nochange" id
rss_row "create, passwd entry added" "$work/fake.toml" "cp $work/passwd/config.orig $work/passwd/config.json" \
  "$shim" create --bundle "$work/passwd" id
for c in "${extra_rss[@]}"; do eval "$c"; done

med() { awk -F'\t' -v n="$1" '$1==n {printf "%.3f", $2}' "$work/results.tsv"; }
sd() { awk -F'\t' -v n="$1" '$1==n {printf "%.3f", $3}' "$work/results.tsv"; }
over() { awk -v a="$(med "$1")" -v b="$(med "$2")" 'BEGIN {printf "%+.3f", a-b}'; }
min_over() { awk -F'\t' -v a="$1" -v b="$2" '$1==a {x=$4} $1==b {y=$4} END {printf "%+.3f", x-y}' "$work/results.tsv"; }
ratio() { awk -v a="$(med "$1")" -v b="$(med "$2")" 'BEGIN {printf "%.2f", a/b}'; }
row() { printf '| %s | %s | %s | %s ms | %s× |\n' "$1" "$(med "$2")" "$(sd "$2")" "$(over "$2" "$3")" "$(ratio "$2" "$3")"; }

{
  echo "# Benchmarks"
  echo
  echo "Generated by \`scripts/bench.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r), runc $($runc --version | head -1 | awk '{print $3}')."
  echo "Whole-process medians over $runs runs (hyperfine -N, 20 warm-ups). \"fake\" is the static exit-0"
  echo "runtime \`test/fakes/recording_runtime\`; every specshim row execs it (or runc), so the difference is"
  echo "specshim's own cost. Rows that rewrite config.json restore it before each run (\`--prepare\`);"
  echo "the restore's own cost is the \`prepare-only\` row and is not subtracted. Bundles are on $(stat -f -c %T "$work")"
  echo "(\`$tmpfs_dir\`), as containerd's are under /run/containerd, except the one row that says otherwise."
  echo
  echo "| case | median ms | stddev ms | over baseline | ratio |"
  echo "|---|---|---|---|---|"
  row "fake runtime alone" fake fake
  row "minimal static exec wrapper → fake (the floor of any wrapper)" wrapper fake
  row "passthrough (\`state\`) → fake" passthrough fake
  row "create, nothing to change → fake" create-nochange fake
  row "create, passwd entry added → fake" create-passwd fake
  row "create, passwd entry added, bundle on $(stat -f -c %T "$disk") (6 fsyncs) → fake" create-passwd-disk fake
  row "prepare-only (cp config.json)" prepare-only fake
  for c in "${extra_rows[@]:-}"; do [ -n "$c" ] && eval "$c"; done
  row "runc state (plain runc)" runc-state runc-state
  row "specshim → runc state" shim-runc-state runc-state
  echo
  echo "specshim's own cost, beyond the one extra execve every wrapper pays (row 2), from the fastest of the $runs"
  echo "runs (the least noisy estimate of fixed work; medians of neighbouring rows swing by ±0.3 ms here):"
  echo "passthrough $(min_over passthrough wrapper) ms, create with nothing to change $(min_over create-nochange wrapper) ms,"
  echo "create adding a passwd entry $(min_over create-passwd wrapper) ms."
  echo
  echo "Peak RSS of one run (GNU time \`%M\`, KiB):"
  echo
  for r in "${rss_rows[@]}"; do echo "- ${r% *}: ${r##* }"; done
  for c in "${extra_sections[@]}"; do echo; "$c"; done
  echo
  echo "Budgets: passthrough ≲ 0.2–0.3 ms over the runtime, create with nothing to change ≲ 0.5–1 ms, peak RSS ≤ 4 MB."
  echo "Load average (1/5/15 min) before the run: $load_before; after: $(cut -d" " -f1-3 /proc/loadavg)."
  echo "\`ldd specshim\`: $(ldd "$shim" 2>&1 | awk '{$1=$1; print}' | tr '\n' ' ')"
  [ -f docs/BENCHMARKS.notes.md ] && { echo; cat docs/BENCHMARKS.notes.md; }
} > "$out"
cat "$out"
