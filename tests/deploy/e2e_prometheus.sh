#!/usr/bin/env bash
# End-to-end check of configs/prometheus and grafana/dashboards against the real pipeline (CTest label
# `prometheus`): synthesize a day with injected faults, replay it, scrape the exporter with the Debian
# `prometheus` using configs/prometheus (scrape and rule evaluation every second, the same rules), then check
# that every dashboard panel's query returns data and that alerts fired for the injected faults the replay
# reached (tests/deploy/panels_return_data.py). Everything listens on 127.0.0.1 on free ports, runs in a
# temporary directory and is stopped on exit; the whole run is bounded in time.
#
# Usage: e2e_prometheus.sh ACMETRACE_BINARY [run|kafka]
#   run    (default) `acmetrace run`: replay, processors and exporter in one process (in-process queues)
#   kafka  the stages as docker/compose.yaml runs them, as separate processes through a local Kafka broker
#          (scripts/kafka-local): `replay --sink kafka`, `process --source kafka --sink kafka`,
#          `export --source kafka`. The replay's speed and lag panels stay empty there (only `run` serves them).
# Environment: E2E_SPEED (replay speed, default 120), E2E_TRACE_SECONDS (trace time to replay at least, default
# 10800), E2E_TIMEOUT_SECONDS (wall-time bound of the replay wait, default 240), PROMETHEUS (binary, default
# prometheus), E2E_MIN_FAULTS (replayed faults whose alert must have fired, default 3), E2E_KEEP=1 keeps the
# temporary directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$(realpath "${1:?usage: e2e_prometheus.sh ACMETRACE_BINARY [run|kafka]}")
mode=${2:-run}
speed=${E2E_SPEED:-120}
trace_seconds=${E2E_TRACE_SECONDS:-10800}
timeout_seconds=${E2E_TIMEOUT_SECONDS:-240}
prometheus=${PROMETHEUS:-prometheus}
command -v "$prometheus" > /dev/null || { echo "e2e: $prometheus not found (scripts/setup installs it)"; exit 1; }
[[ $mode == run || $mode == kafka ]] || { echo "e2e: mode must be run or kafka, not $mode"; exit 2; }

# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
e2e_begin e2e '*.err' prometheus.log
kafka_port=""
# After the processes stop: the broker this run started, wiped.
e2e_on_exit() {
  if [[ -n $kafka_port ]]; then "$root/scripts/kafka-local" --port "$kafka_port" reset > /dev/null 2>&1 || true; fi
}

# Starts "${@:2}" in the background with stdout in $tmp/$1.out and stderr in $tmp/$1.err.
start() {
  local name=$1; shift
  "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" &
  pids+=($!)
}

# The address an exporter printed on its first line (`listening on http://HOST:PORT/metrics`).
exporter_address() {
  wait_for 60 grep -q '^listening on http://' "$tmp/$1.out" || { echo "e2e: $1 printed no address" >&2; return 1; }
  sed -n '1s#^listening on http://\([^/]*\)/.*#\1#p' "$tmp/$1.out"
}

echo "e2e: synthesizing one day at scale 0.05 with injected faults"
"$bin" synth --out "$tmp/data" --days 1 --scale 0.05 --inject-faults > "$tmp/synth.log"
[[ -s $tmp/data/faults.csv ]] || { echo "e2e: synth wrote no faults.csv"; exit 1; }
# The replay starts at the day (synth.start): the job trace also holds jobs submitted days before it, which the
# replay would otherwise spend its minutes on (replay.from, for run and replay alike).
ACMETRACE_REPLAY_FROM=$("$bin" config --defaults | sed -n '/^synth:/,/^[a-z]/s/^  start: //p')
export ACMETRACE_REPLAY_FROM
[[ -n $ACMETRACE_REPLAY_FROM ]] || { echo "e2e: no synth.start in acmetrace config"; exit 1; }

allow_empty=()
if [[ $mode == run ]]; then
  echo "e2e: starting acmetrace run --speed $speed"
  start run "$bin" run --data "$tmp/data" --speed "$speed" --listen 127.0.0.1:0
  exporter=$(exporter_address run)
else
  echo "e2e: starting a Kafka broker (scripts/kafka-local)"
  boot=$("$root/scripts/kafka-local" --port 0 start 2> "$tmp/kafka.err")
  kafka_port=${boot##*:}
  echo "e2e: broker at $boot; starting replay, processors and exporter as separate processes"
  start replay "$bin" replay --data "$tmp/data" --sink kafka --brokers "$boot" --speed "$speed"
  # The processors and the exporter start once the replay has created the topics and delivered records to
  # them (its progress line): `acmetrace process` exits on a partition without a leader yet (a topic created
  # a moment before), where docker/compose.yaml's restart policy would start it again.
  wait_for 60 grep -q ' replay: trace ' "$tmp/replay.err" || { echo "e2e: the replay reported no progress"; exit 1; }
  start process "$bin" process --source kafka --sink kafka --brokers "$boot" --group "e2e-process-$$"
  start export "$bin" export --source kafka --brokers "$boot" --group "e2e-export-$$" --listen 127.0.0.1:0
  exporter=$(exporter_address export)
  allow_empty=(--allow-empty '^Replay (speed|lag)$|^Replay lag behind schedule$')
fi
[[ -n $exporter ]] || { echo "e2e: no exporter address"; exit 1; }
echo "e2e: exporter at $exporter"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$here/render_prometheus_config.py" --exporter "$exporter" --interval 1s --out "$tmp/prometheus.yml"
promtool check config "$tmp/prometheus.yml" > /dev/null
since=$(date +%s)
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$port" --log.level=warn > "$tmp/prometheus.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$port"
wait_for 60 curl -fsS -o /dev/null "$url/-/ready" || { echo "e2e: prometheus did not become ready"; exit 1; }
echo "e2e: prometheus at $url"

# Replay until the trace clock of every cluster has advanced trace_seconds and passed the end of the first
# fault (plus 5 minutes for its flag and alert), or fail after timeout_seconds.
first_fault_end=$(awk -F, 'NR > 1 {print $5}' "$tmp/data/faults.csv" | sort -n | head -n 1)
progress() {
  python3 - "$url" "$trace_seconds" "$first_fault_end" "$tmp/trace0" << 'PY'
import json, os, sys, urllib.parse, urllib.request
url, need, fault_end, state = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
q = urllib.parse.urlencode({"query": "min(acmetrace_replay_trace_time_seconds)"})
res = json.load(urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=5))["data"]["result"]
if not res:
    sys.exit(1)
now = float(res[0]["value"][1])
if not os.path.exists(state):
    open(state, "w").write(str(now))
t0 = float(open(state).read())
sys.exit(0 if now - t0 >= need and now >= fault_end + 300 else 1)
PY
}
alive() {
  local pid
  for pid in "${pids[@]}"; do kill -0 "$pid" || return 1; done
}
deadline=$((SECONDS + timeout_seconds))
until progress; do
  alive || { echo "e2e: a pipeline process exited early"; exit 1; }
  ((SECONDS < deadline)) || { echo "e2e: the replay did not reach the target trace time within ${timeout_seconds}s"; exit 1; }
  sleep 2
done
sleep 3  # a few more scrapes and rule evaluations after the target
echo "e2e: replayed $(($(date +%s) - since)) s of wall time; checking dashboards and alerts"
python3 "$here/panels_return_data.py" --prometheus "$url" --since "$since" --data "$tmp/data" \
  --min-faults "${E2E_MIN_FAULTS:-3}" "${allow_empty[@]}"
