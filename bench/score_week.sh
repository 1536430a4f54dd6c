#!/usr/bin/env bash
# `acmetrace score` over a week of 15 s samples with the shipped rules, against a local Prometheus: wall
# time and peak RSS (/usr/bin/time -v), then the same with acmetrace's flags (--anomalies), the for: sweep
# and the HTML page.
#
#   bench/score_week.sh [--nodes N] [--days D] [--runs N] [--bin PATH]
#
#   --nodes N  nodes of 8 GPUs per cluster, two clusters (default 16: 256 GPUs' DCGM_FI_DEV_GPU_TEMP plus the
#              acmetrace_anomaly_active flags of both clusters; bench/make_score_week.py)
#   --days D   days of 15 s samples (default 7)
#   --runs N   timed runs of each command (default 3; medians)
#   --bin PATH the acmetrace binary (default build/apps/acmetrace)
#
# Goal (issue #13): under a minute for a week with the shipped rules. The OpenMetrics text, promtool's blocks
# and the compacted TSDB are cached in $ACMETRACE_BENCH_DIR/score (.cache/bench); Prometheus (Debian's
# /usr/bin/prometheus) is started on a free 127.0.0.1 port and stopped at the end. Needs python3, promtool,
# prometheus, /usr/bin/time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/apps/acmetrace"
bench_dir="${ACMETRACE_BENCH_DIR:-$root/.cache/bench}/score"
nodes=16 days=7 runs=3
while (($#)); do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --days) days="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "score_week: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "score_week: $bin missing: run scripts/build" >&2; exit 1; }
for tool in python3 promtool /usr/bin/prometheus /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "score_week: $tool missing (scripts/setup)" >&2; exit 1; }
done
data="$bench_dir/nodes$nodes-days$days"
mkdir -p "$data"
if [[ ! -f "$data/tsdb.done" ]]; then
  echo "score_week: writing $days days of 15 s samples ($nodes nodes x 8 GPUs x 2 clusters)"
  python3 "$root/bench/make_score_week.py" "$data" --nodes "$nodes" --days "$days"
  rm -rf "$data/tsdb"
  start=$(date +%s)
  promtool tsdb create-blocks-from openmetrics --quiet "$data/week.om" "$data/tsdb"
  echo "score_week: promtool blocks in $(( $(date +%s) - start )) s ($(du -sh "$data/tsdb" | cut -f1))"
  rm -f "$data/week.om"  # 1.4 GB of text for a week; the blocks are what is kept
  touch "$data/tsdb.done"
fi
echo "global: {}" > "$data/prometheus.yml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
/usr/bin/prometheus --storage.tsdb.path="$data/tsdb" --storage.tsdb.retention.time=100y \
  --config.file="$data/prometheus.yml" --web.listen-address="127.0.0.1:$port" >"$data/prometheus.log" 2>&1 &
prom_pid=$!
trap 'kill $prom_pid 2>/dev/null; wait $prom_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || { echo "score_week: prometheus not ready" >&2; tail "$data/prometheus.log" >&2; exit 1; }
# Prometheus compacts freshly loaded 2 h blocks into larger ones in the background: wait for it to settle,
# so the runs measure queries, not compaction.
for _ in $(seq 1 120); do
  before=$(ls "$data/tsdb" | wc -l); sleep 5; after=$(ls "$data/tsdb" | wc -l)
  [[ "$before" == "$after" ]] && break
done
from=$((1688169600)); to=$((1688169600 + days * 86400))
url="http://127.0.0.1:$port"

measure() {  # label, then the arguments of acmetrace score
  local label="$1"; shift
  local walls=() rss=() cpus=()
  for _ in $(seq 1 "$runs"); do
    /usr/bin/time -v "$bin" score --prometheus "$url" --faults "$data/faults.csv" --from "$from" --to "$to" "$@" \
      >"$data/out.txt" 2>"$data/time.txt" || { cat "$data/time.txt" >&2; exit 1; }
    walls+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$data/time.txt")")
    rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$data/time.txt")")
    cpus+=("$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.2f", s}' "$data/time.txt")")
  done
  local wall_median rss_max
  wall_median=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  rss_max=$(printf '%s\n' "${rss[@]}" | sort -g | tail -1)
  # acmetrace's own CPU: the rest of the wall time is Prometheus evaluating the queries.
  printf 'score_week: %-40s wall %6.2f s (median of %d: %s)  acmetrace CPU %s s  peak RSS %d MB\n' "$label" \
    "$wall_median" "$runs" "${walls[*]}" "${cpus[*]}" $((rss_max / 1024))
}

series=$(curl -s "$url/api/v1/query?query=count(%7B__name__%3D~%22.%2B%22%7D)&time=$((from + 3600))" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
echo "score_week: $series series over $days days at 15 s, $(( $(wc -l < "$data/faults.csv") - 1 )) incidents, prometheus $url"
measure "shipped rules (21 alerts)"
measure "shipped rules + --anomalies + --html" --anomalies "$data/anomalies.jsonl" --html "$data/score.html" --json "$data/score.json"
measure "shipped rules, --sweep-for 0s,1m,5m,15m" --sweep-for 0s,1m,5m,15m
sed -n '1,/^all rules/p' "$data/out.txt" | grep -v "^    caught" | head -30
echo "score_week: page $data/score.html"
