#!/usr/bin/env bash
# The GPU temperature alert fires on the default `acmetrace run` (CTest label `prometheus`, issue 24): the data
# of run's default (a synthesized day at scale 0.05 with injected faults: run.default_days, run.default_scale),
# replayed at run.default_speed (60) from 20 trace minutes before its first overheat to 5 minutes after it ends,
# scraped by the Debian `prometheus` with configs/prometheus/prometheus.yml as committed (its 250 ms intervals and
# rules-60x/; only the exporter's address and the rules' paths are changed). DcgmGpuTemperatureHigh must have
# fired for the overheated GPU (ALERTS{alertstate="firing"}, with its kind label). With E2E_RULES_DIR=rules (the
# speed-1 rules: `for: 1m` is an hour of trace at speed 60) it fails. Everything listens on 127.0.0.1 on free
# ports, runs in a temporary directory and is stopped on exit; under a minute of replay.
#
# Usage: overheat_alert_e2e.sh ACMETRACE_BINARY   (environment: PROMETHEUS, default prometheus; E2E_KEEP=1 keeps
# the temporary directory; E2E_RULES_DIR=rules loads configs/prometheus/rules/dcgm.yml instead of rules-60x/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:?usage: overheat_alert_e2e.sh ACMETRACE_BINARY}")
prometheus=${PROMETHEUS:-prometheus}
command -v "$prometheus" > /dev/null || { echo "overheat: $prometheus not found (scripts/setup installs it)"; exit 1; }

# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
e2e_begin overheat '*.err' prometheus.log
default() { "$bin" config --defaults | sed -n "s/^  default_$1: //p"; }

days=$(default days)
scale=$(default scale)
speed=$(default speed)
echo "overheat: synthesizing run's default data (days $days, scale $scale, injected faults); speed $speed"
"$bin" synth --out "$tmp/data" --days "$days" --scale "$scale" --inject-faults > "$tmp/synth.log" 2>&1
# The first overheat: cluster, node, GPU index, start and end (unix seconds).
read -r cluster node gpu start_s end_s < <(python3 - "$tmp/data/faults.csv" << 'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kind"] == "gpu_overheat"]
r = min(rows, key=lambda r: int(r["start"]))
node, gpu = r["subject"].rsplit("-", 1)
print(r["cluster"], node, gpu, r["start"], r["end"])
PY
)
from_s=$((start_s - 1200))
to_s=$((end_s + 300))
printf 'replay:\n  from: %s\n  to: %s\n' "$from_s" "$to_s" > "$tmp/window.yaml"
echo "overheat: GPU $gpu of $node ($cluster) overheats from $start_s to $end_s; replaying $from_s to $to_s"

exporter_port=$(free_port)
prom_port=$(free_port)
"$bin" --config "$tmp/window.yaml" run --data "$tmp/data" --speed "$speed" --listen "127.0.0.1:$exporter_port" \
  > "$tmp/run.out" 2> "$tmp/run.err" &
pids+=($!)
run_pid=$!
# Prometheus discovers the nodes once at start (then every 30 s): start it once the exporter lists them.
listed() { curl -fsS "http://127.0.0.1:$exporter_port/targets" | grep -q "\"$node\""; }
wait_for 60 listed || { echo "overheat: the exporter never listed node $node on /targets"; exit 1; }
python3 "$here/render_prometheus_config.py" --exporter "127.0.0.1:$exporter_port" --keep-intervals \
  --out "$tmp/prometheus.yml"
if [[ -n ${E2E_RULES_DIR:-} ]]; then sed -i "s|/rules-60x/\*\.yml|/$E2E_RULES_DIR/dcgm.yml|" "$tmp/prometheus.yml"; fi
grep -q "scrape_interval: 250ms" "$tmp/prometheus.yml" || { echo "overheat: the shipped config no longer scrapes every 250ms"; exit 1; }
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn > "$tmp/prometheus.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$prom_port"
wait_for 60 curl -fsS -o /dev/null "$url/-/ready" || { echo "overheat: prometheus did not become ready"; exit 1; }

# Until the replay is past the overheat's end plus 4 trace minutes (as Prometheus saw it), then the alert.
query() {
  python3 - "$url" "$1" << 'PY'
import json, sys, urllib.parse, urllib.request
url, q = sys.argv[1], sys.argv[2]
res = json.load(urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": q}), timeout=5))
print(json.dumps(res["data"]["result"]))
PY
}
reached() {
  query "max(acmetrace_replay_trace_time_seconds) >= $((end_s + 240))" | grep -q '"value"'
}
deadline=$((SECONDS + $(((to_s - from_s) / speed + 60))))
until reached; do
  kill -0 "$run_pid" 2> /dev/null || { echo "overheat: acmetrace run exited early"; exit 1; }
  ((SECONDS < deadline)) || { echo "overheat: the replay did not reach the overheat's end in time"; exit 1; }
  sleep 1
done
selector="alertname=\"DcgmGpuTemperatureHigh\",alertstate=\"firing\",cluster=\"$cluster\",Hostname=\"$node\",gpu=\"$gpu\""
fired=$(query "max_over_time(ALERTS{$selector,kind=\"gpu_overheat\"}[5m])")
if ! grep -q '"value"' <<< "$fired"; then
  echo "overheat: DcgmGpuTemperatureHigh never fired for GPU $gpu of $node ($cluster)"
  echo "overheat: its temperature as scraped: $(query "max_over_time(DCGM_FI_DEV_GPU_TEMP{Hostname=\"$node\",gpu=\"$gpu\"}[5m])")"
  exit 1
fi
# The 250 ms scrapes keep up: AcmetraceExporterDown never fired, and no target missed more than 5% of its scrapes
# (a scrape late past the 250 ms timeout on a loaded machine is one missed sample, not an outage).
exporter_down=$(query 'max_over_time(ALERTS{alertname="AcmetraceExporterDown"}[2m])')
[[ $exporter_down == "[]" ]] || { echo "overheat: AcmetraceExporterDown fired at the shipped intervals"; exit 1; }
missed=$(query "max(1 - avg_over_time(up[2m]))" | sed -n 's/.*"\([0-9.e+-]*\)"\]}\]$/\1/p')
slowest=$(query "max(max_over_time(scrape_duration_seconds[2m]))" | sed -n 's/.*"\([0-9.e+-]*\)"\]}\]$/\1/p')
python3 -c "import sys; sys.exit(0 if float('${missed:-1}') <= 0.05 else 1)" ||
  { echo "overheat: a target missed ${missed:-?} of its scrapes at the shipped 250 ms (slowest ${slowest:-?} s)"; exit 1; }
echo "overheat: DcgmGpuTemperatureHigh fired for GPU $gpu of $node ($cluster) at speed $speed with the shipped config;"
echo "overheat: scrapes every 250 ms: at most $missed of a target's missed, the slowest took $slowest s"
