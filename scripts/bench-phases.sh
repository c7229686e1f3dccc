#!/usr/bin/env bash
# Where a create's instructions go, phase by phase: callgrind counts every
# instruction specshim runs up to the runtime's execve (wall time on this VM
# swings by more than most phases cost; instruction counts repeat exactly).
# The cases are the NVIDIA-sized creates of scripts/bench.sh, on the same
# bundles (scripts/bench-bundles.sh), each run twice so the parse cache is warm.
# Usage: scripts/bench-phases.sh [--binary SPECSHIM] [build-dir]
#   --binary SPECSHIM  count another specshim build (an older one) on the same cases
set -euo pipefail
cd "$(dirname "$0")/.."
binary=""
if [ "${1:-}" = --binary ]; then binary=$(realpath "$2"); shift 2; fi
build=${1:-build}
shim=${binary:-$PWD/$build/shim/specshim}
fake="$PWD/$build/test/fakes/recording_runtime"
[ -x "$shim" ] && [ -x "$fake" ] || { echo "build first: cmake --build $build" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench-phases: needs valgrind (scripts/install-deps.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench-cdi-specs.sh  # make_dir, spec_nvidia
source scripts/bench-bundles.sh    # make_bundle, cdi_bundle, nvidia_env_bundles

CDI_FILES=1 make_dir "$work/cdi-1" "example.com/accel"
printf '[runtime]\npath = "%s"\n\n[cdi]\nspec-dirs = ["%s"]\ncache-dir = "%s"\n' "$fake" "$work/cdi-1" "$work/cache-cdi" \
  >"$work/cdi.toml"
cdi_bundle "$work/cdi2" 0 "example.com/accel=0,example.com/accel=1"
nvidia_env_bundles "$work" "$fake" "cache-dir = \"$work/cache-nv\""

# count CONFIG BUNDLE: the callgrind profile of a warm create (one run first
# fills the parse cache), up to the runtime's execve.
count() {
  local argv=(--log "$work/log.json" --log-format json create --bundle "$work/$2" id)
  SPECSHIM_CONFIG="$work/$1.toml" "$shim" "${argv[@]}" >/dev/null
  cp "$work/$2/config.orig" "$work/$2/config.json"
  SPECSHIM_CONFIG="$work/$1.toml" valgrind -q --tool=callgrind --dump-before=execve \
    --callgrind-out-file="$work/cg.$2" "$shim" "${argv[@]}" >/dev/null
  cp "$work/$2/config.orig" "$work/$2/config.json"
  callgrind_annotate --inclusive=yes --threshold=100 "$work/cg.$2.1" >"$work/annotated.$2" 2>/dev/null
}
# ir CASE PATTERN: the inclusive count of the first function matching PATTERN
# (an extended regex on callgrind_annotate's "file:function" column), 0 if none.
ir() {
  awk -v re="$2" '$0 ~ re { gsub(",", "", $1); print $1; found = 1; exit } END { if (!found) print 0 }' \
    "$work/annotated.$1"
}
total() { grep -m1 -E '^summary:' "$work/cg.$1.1" | awk '{print $2}'; }

cases=(cdi2 nv-outside nv-grant)
count cdi cdi2
count nv nv-outside
count nv nv-grant
k() { awk -v n="$1" 'BEGIN { printf "%.0f K", n / 1000 }'; }
row() {  # label, then one count per case
  local label=$1; shift
  printf '| %s |' "$label"
  for n in "$@"; do printf ' %s |' "$(k "$n")"; done
  echo
}
declare -A v
for c in "${cases[@]}"; do
  v[$c,total]=$(total "$c")
  v[$c,main]=$(ir "$c" ':main \[')
  v[$c,config]=$(ir "$c" 'read_config_file\(std::filesystem')
  v[$c,read]=$(ir "$c" 'BundleDir::read\(\)')
  v[$c,chain]=$(ir "$c" 'Chain::run\(')
  v[$c,env]=$(ir "$c" 'EnvDevices::apply\(')
  v[$c,checkpoint]=$(ir "$c" 'Checkpoint::read\(')
  v[$c,cdi]=$(ir "$c" 'Cdi::apply\(')
  v[$c,files]=$(ir "$c" 'cdi::load_specs\(')
  v[$c,plan]=$(ir "$c" 'cdi::plan\(')
  v[$c,store]=$(ir "$c" 'BundleDir::store\(')
done
col() {  # EXPR over the counts above, once per case
  local c
  for c in "${cases[@]}"; do
    awk -v total="${v[$c,total]}" -v main="${v[$c,main]}" -v config="${v[$c,config]}" -v read="${v[$c,read]}" \
      -v chain="${v[$c,chain]}" -v env="${v[$c,env]}" -v checkpoint="${v[$c,checkpoint]}" -v cdi="${v[$c,cdi]}" \
      -v files="${v[$c,files]}" -v plan="${v[$c,plan]}" -v store="${v[$c,store]}" "BEGIN { print $1 }"
  done
}
echo "Instructions of a warm create up to the runtime's execve (callgrind), by phase; $(basename "$shim") at $shim."
echo "Cases: 2 CDI devices by annotation from the NVIDIA-sized YAML spec; NVIDIA_VISIBLE_DEVICES=0,1 outside CRI"
echo "(no grant to check); NVIDIA_VISIBLE_DEVICES=<2 UUIDs> checked against a 201-entry checkpoint."
echo
echo "| phase | annotation, 2 CDI devices | env list, no grant | env list + checkpoint |"
echo "|---|---|---|---|"
row "start-up (before main)" $(col "total - main")
row "config file (read, parse, build the chain)" $(col "config")
row "config.json read and parsed" $(col "read")
row "env-devices (request, trust, grant)" $(col "env")
row "… of which the kubelet's checkpoint" $(col "checkpoint")
row "cdi: spec files, parse cache" $(col "files")
row "cdi: requests resolved (all, grants)" $(col "plan")
row "cdi: edits merged and written into the spec" $(col "cdi - files - plan")
row "other modifiers, the chain's copies and compares" $(col "chain - env - cdi")
row "config.json serialized and written" $(col "store")
row "the rest (argv, runtime lookup, exec)" $(col "main - config - read - chain - store")
row "**total**" $(col "total")
