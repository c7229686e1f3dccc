#!/usr/bin/env bash
# run-fuzzer.sh FUZZER SECONDS SEED_DIR... — runs a libFuzzer target for a
# bounded time on a scratch corpus seeded from the given dirs (files of any
# depth; only small ones). Fails on any crash, leak or sanitizer report.
set -euo pipefail
fuzzer=$1 seconds=$2
shift 2
work=$(mktemp -d /tmp/specshim-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
for d in "$@"; do
  [ -d "$d" ] || continue
  find "$d" -type f -size -64k -print0 | while IFS= read -r -d '' f; do
    cp "$f" "$work/corpus/$(sha1sum "$f" | cut -c1-16)"
  done
done
cd "$work"
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/" corpus 2>&1 | tail -n 25
