#!/usr/bin/env bash
# `promtool check metrics` on what a scraper gets from `acmetrace run` (issue #12): a synthesized hour with
# injected faults replayed unpaced, then /metrics scraped while the final state is served. The only lint
# allowed is promtool's camelCase complaint about the dcgm-exporter persona's labels (UUID, modelName,
# Hostname: NVIDIA's names, documented in docs/metrics.md); anything else fails.
# Usage: check_metrics.sh ACMETRACE_BINARY [PROMTOOL]
set -euo pipefail
bin=$(realpath "${1:?usage: check_metrics.sh ACMETRACE_BINARY [PROMTOOL]}")
promtool=${2:-promtool}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/acmetrace-check-metrics.XXXXXX")
pid=""
cleanup() {
  local rc=$?
  [[ -n $pid ]] && { kill "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; }
  ((rc != 0)) && [[ -s $tmp/run.err ]] && tail -n 20 "$tmp/run.err"
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
"$bin" synth --out "$tmp/data" --days 1 --scale 0.05 --inject-faults > /dev/null
printf 'replay:\n  to: %s\n' $((1688140800 + 7200)) > "$tmp/acmetrace.yaml"
"$bin" --config "$tmp/acmetrace.yaml" run --data "$tmp/data" --speed max --listen 127.0.0.1:0 > "$tmp/run.out" 2> "$tmp/run.err" &
pid=$!
for _ in $(seq 1 120); do
  grep -q '^listening on http://' "$tmp/run.out" 2> /dev/null && break
  sleep 0.5
done
url=$(sed -n '1s#^listening on \(http://[^ ]*\)$#\1#p' "$tmp/run.out")
[[ -n $url ]] || { echo "check_metrics: acmetrace run printed no address"; exit 1; }
# The replay of two hours at --speed max takes a moment; scrape once it served windows of both clusters.
for _ in $(seq 1 120); do
  curl -fsS "$url" > "$tmp/metrics.txt"
  grep -q '^acmetrace_gpus_capacity{cluster="kalos"}' "$tmp/metrics.txt" &&
    grep -q '^acmetrace_gpus_capacity{cluster="seren"}' "$tmp/metrics.txt" && break
  sleep 0.5
done
for name in acmetrace_build_info process_cpu_seconds_total acmetrace_job_queue_seconds DCGM_FI_DEV_GPU_UTIL \
  acmetrace_anomalies_total acmetrace_jobs_finished_total; do
  grep -q "^$name[{ ]" "$tmp/metrics.txt" || { echo "check_metrics: no $name in the scrape"; exit 1; }
done
grep -q '^acmetrace_build_info{version="[0-9.]*",revision="[0-9a-f]' "$tmp/metrics.txt" ||
  { echo "check_metrics: acmetrace_build_info has no version or git revision:"; grep '^acmetrace_build_info' "$tmp/metrics.txt"; exit 1; }
rc=0
"$promtool" check metrics < "$tmp/metrics.txt" > "$tmp/lint.txt" 2>&1 || rc=$?
echo "check_metrics: promtool exit $rc, $(wc -l < "$tmp/metrics.txt") lines checked"
if grep -v "^DCGM_FI_[A-Z_]* label names should be written in 'snake_case' not 'camelCase'$" "$tmp/lint.txt" | grep -q .; then
  echo "check_metrics: promtool found problems besides the persona's camelCase labels:"
  grep -v "^DCGM_FI_[A-Z_]* label names should be written in 'snake_case' not 'camelCase'$" "$tmp/lint.txt"
  exit 1
fi
echo "check_metrics: ok (only the documented camelCase labels of the DCGM_* persona)"
