#!/usr/bin/env bash
# Pacing accuracy at --speed 360: replays two trace hours of a synthetic day (20 s of wall time)
# and prints the worst lateness of a record against its schedule (goal: at most 50 ms).
# Usage: bench/pacing_accuracy.sh [speed] [trace-hours]
set -euo pipefail
cd "$(dirname "$0")/.."
speed=${1:-360}
hours=${2:-2}
bin=build/apps/acmetrace
dir=.cache/bench/pacing
if [[ ! -f $dir/.complete ]]; then
  rm -rf "$dir"
  "$bin" synth --out "$dir" --days 1 --scale 0.2 --seed 7 >/dev/null 2>&1
  touch "$dir/.complete"
fi
from=1688140800  # 2023-07-01 00:00:00+08:00, synth's default start
to=$((from + hours * 3600))
log=$(mktemp)
start=$(date +%s.%N)
"$bin" replay --data "$dir" --from "$from" --to "$to" --speed "$speed" --sink null 2>"$log"
end=$(date +%s.%N)
records=$(grep -o '[0-9]* records (' "$log" | tail -1 | cut -d' ' -f1)
lateness=$(grep -o 'worst lateness behind schedule [0-9]* ms' "$log" | grep -o '[0-9]* ms')
expected=$(echo "scale=2; $hours * 3600 / $speed" | bc)
elapsed=$(echo "scale=2; ($end - $start) / 1" | bc)
echo "pacing: speed $speed, $hours trace hours, $records records"
echo "pacing: wall time ${elapsed} s (schedule ${expected} s), worst lateness ${lateness} (goal <= 50 ms)"
rm -f "$log"
