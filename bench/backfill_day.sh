#!/usr/bin/env bash
# acmetrace backfill vs its backfiller: one synthesized day of both clusters (every metric) turned
# into Prometheus blocks. Prints acmetrace's own CPU seconds against promtool's (the goal: acmetrace
# at most promtool's, so the backfiller is the limit), samples/s of the whole, peak RSS of both, and
# the disk cost per series-day of the blocks, and the peak RSS of the whole run (the largest process:
# acmetrace, a promtool, or the temporary prometheus of the recording-rule step). --days N backfills
# N days instead: the peaks should not grow with the window. --from T --to T backfill that window of
# the data only (backfill's own flags: unix seconds or ISO 8601), e.g. its first hour.
#   bench/backfill_day.sh [--scale S] [--days N] [--from T --to T] [--build DIR] [--work DIR]   (default scale 1, 1 day)
set -euo pipefail
scale=1
days=1
build=build
work=${TMPDIR:-/tmp}/acmetrace-bench-backfill
window=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --from|--to) window+=("$1" "$2"); shift 2 ;;
    *) echo "usage: bench/backfill_day.sh [--scale S] [--days N] [--from T --to T] [--build DIR] [--work DIR]" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/$build/apps/acmetrace
[[ -x "$bin" ]] || { echo "backfill_day: $bin not built (scripts/build)" >&2; exit 1; }
mkdir -p "$work"
# shellcheck source=bench/synth_cached.sh
source "$root/bench/synth_cached.sh"
synth_cached "$bin" "$work" "$days" "$scale"
promdir=$work/promdir-d$days-s$scale
rm -rf "$promdir"
# The default window: what the telemetry covers (the synthesized days; their jobs end later).
/usr/bin/time -f "%e %M" -o "$work/time.txt" "$bin" backfill --data "$data" --out "$promdir" "${window[@]}" \
  > "$work/backfill.out" 2> "$work/backfill.err" || { cat "$work/backfill.err" >&2; exit 1; }
read -r wall whole_rss_kb < "$work/time.txt"
samples=$(sed -n 's/.* \([0-9]*\) samples, [0-9]* windows.*/\1/p' "$work/backfill.err")
read -r own_cpu own_rss < <(sed -n 's/.*acmetrace: \([0-9.]*\) CPU s, peak RSS \([0-9]*\) MB.*/\1 \2/p' "$work/backfill.err")
read -r text_mb tool_cpu tool_rss < <(sed -n 's/.*promtool: [0-9]* chunks, \([0-9.]*\) MB of OpenMetrics, \([0-9.]*\) CPU s, peak RSS \([0-9]*\) MB.*/\1 \2 \3/p' "$work/backfill.err")
read -r series_days disk_bytes < <(python3 - "$promdir" <<'PY'
import json, os, sys
d = sys.argv[1]
series_days, size = 0.0, 0
for name in os.listdir(d):
    meta = os.path.join(d, name, "meta.json")
    if not os.path.isfile(meta):
        continue
    m = json.load(open(meta))
    series_days += m["stats"]["numSeries"] * (m["maxTime"] - m["minTime"]) / 86400000.0
    for root, _, files in os.walk(os.path.join(d, name)):
        size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
print(series_days, size)
PY
)
awk -v s="$samples" -v w="$wall" -v oc="$own_cpu" -v orss="$own_rss" -v tc="$tool_cpu" -v trss="$tool_rss" \
    -v mb="$text_mb" -v sd="$series_days" -v db="$disk_bytes" -v scale="$scale" -v days="$days" \
    -v whole="$whole_rss_kb" 'BEGIN {
  printf "backfill, %d day(s) of seren+kalos at scale %s, every metric, 15 s scrapes\n", days, scale
  printf "  samples                 %.0f (%.1f MB of OpenMetrics)\n", s, mb
  printf "  wall                    %.1f s, %.0f samples/s end to end\n", w, s / w
  printf "  acmetrace CPU           %.1f s (peak RSS %d MB)\n", oc, orss
  printf "  promtool CPU            %.1f s (peak RSS %d MB)\n", tc, trss
  printf "  acmetrace / promtool    %.2f (goal <= 1)\n", oc / tc
  printf "  blocks on disk          %.1f MB, %.0f bytes per series-day (%.0f series-days)\n", db / 1e6, db / sd, sd
  printf "  peak RSS of the run     %d MB (the largest process, the recording-rule prometheus included)\n", whole / 1024
}'
