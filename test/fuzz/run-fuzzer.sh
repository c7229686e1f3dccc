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
rc=0
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/" corpus >"$work/log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  # The report's head (what and where) matters more than libFuzzer's stats;
  # strip template arguments so the frames stay readable in CI output.
  grep -m1 -A40 -E '^==[0-9]+==ERROR|runtime error|^==[0-9]+== ERROR' "$work/log" |
    sed -E 's/<[^<>]*>//g; s/<[^<>]*>//g; s/<[^<>]*>//g' | cut -c1-300 || true
  for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -f "$f" ] || continue
    echo "--- reproducer $(basename "$f") ($(stat -c %s "$f") bytes, base64):"
    head -c 4096 "$f" | base64 -w 120
  done
fi
tail -n 8 "$work/log"
echo "exit status $rc"
exit "$rc"
