#!/usr/bin/env bash
# End to end: `acmetrace run --speed max --until-end` over a synthetic week of Seren at scale 0.2
# (replay -> processors -> exporter in one process). Prints records/s and peak RSS (/usr/bin/time -v).
# Usage: bench/run_end_to_end.sh [days=7] [scale=0.2]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${ACMETRACE_BINARY:-build/apps/acmetrace}
days=${1:-7}
scale=${2:-0.2}
data=${ACMETRACE_BENCH_DIR:-.cache/bench}/seren-d${days}-s${scale}
if [[ ! -f $data/.complete ]]; then
  rm -rf "$data"
  echo "synthesizing $days day(s) of Seren at scale $scale into $data"
  "$bin" synth --out "$data" --clusters seren --days "$days" --scale "$scale" >/dev/null
  touch "$data/.complete"
fi
echo "data: $(du -sh "$data/data" | cut -f1) of CSV"
log=$(mktemp)
trap 'rm -f "$log" "$log.prom"' EXIT
/usr/bin/time -v "$bin" run --data "$data" --speed max --until-end --listen 127.0.0.1:0 \
  --metrics-out "$log.prom" >/dev/null 2>"$log"
records=$(sed -n 's/.*done: \([0-9]*\) records processed.*/\1/p' "$log")
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
secs=$(awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }' <<<"$wall")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
user=$(sed -n 's/.*User time (seconds): //p' "$log")
sys=$(sed -n 's/.*System time (seconds): //p' "$log")
grep 'run: done' "$log" || true
echo "records: $records in ${secs} s wall (user ${user} s, sys ${sys} s)"
awk -v r="$records" -v s="$secs" 'BEGIN { printf "records/s: %.0f (wall)\n", r / s }'
awk -v k="$rss" 'BEGIN { printf "peak RSS: %.1f MiB\n", k / 1024 }'
echo "series exported at the end: $(grep -vc '^#' "$log.prom")"
