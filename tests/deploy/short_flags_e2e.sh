#!/usr/bin/env bash
# Short anomaly flags reach a stock Prometheus on the shipped config (CTest label `prometheus`, issue #12):
# the first hour of a synthesized day with injected faults (seed 17: four XID faults, two of them shorter
# than one 15 s scrape at speed 60), replayed by `acmetrace run` at speed 60 (one hour = 60 s of wall time)
# and scraped by the Debian `prometheus` with configs/prometheus/prometheus.yml at 15 s scrape and evaluation
# intervals, the slowest scraper the exporter's flag hold is sized for (export.scrape_interval_s; the shipped
# config scrapes every 250 ms at speed 60; only the exporter's address, the intervals and the rules' paths are
# changed). Checks that
#   - every injected fault of the hour was flagged by the processors (the flags of the same replay at
#     --speed max are the reference: event time makes them the same at every speed),
#   - every flag shows in Prometheus (acmetrace_anomaly_active{cluster,kind,subject} = 1 at some scrape),
#     acmetrace_anomalies_total counts each flag from 0 (increase() sees the first one), and
#   - the shipped alert of the flag's kind fired for its subject (ALERTS{alertstate="firing"}).
# Everything listens on 127.0.0.1 on free ports, runs in a temporary directory and is stopped on exit; about
# two minutes of wall time.
#
# Usage: short_flags_e2e.sh ACMETRACE_BINARY   (environment: PROMETHEUS, default prometheus; E2E_KEEP=1 keeps
# the temporary directory; E2E_SCRAPE_HOLD_S overrides export.scrape_interval_s of the exporter, to watch the
# test fail with 0.001)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$(realpath "${1:?usage: short_flags_e2e.sh ACMETRACE_BINARY}")
prometheus=${PROMETHEUS:-prometheus}
command -v "$prometheus" > /dev/null || { echo "short_flags: $prometheus not found (scripts/setup installs it)"; exit 1; }
start_s=1688140800  # 2023-07-01 00:00 +08:00
end_s=$((start_s + 3600))
speed=60

# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
e2e_begin short-flags '*.err' prometheus.log

echo "short_flags: synthesizing a day at scale 0.05 with injected faults (seed 17); replaying its first hour"
"$bin" synth --out "$tmp/data" --days 1 --scale 0.05 --seed 17 --start "$start_s" --inject-faults > "$tmp/synth.log"
# The hour from its start: synth's job trace also holds jobs submitted days before (the window's earlier jobs),
# which the live replay would otherwise spend its minutes on.
printf 'replay:\n  from: %s\n  to: %s\n' "$start_s" "$end_s" > "$tmp/first_hour.yaml"
printf '# acmetrace run of short_flags_e2e.sh\nreplay:\n  from: %s\n' "$start_s" > "$tmp/acmetrace.yaml"
if [[ -n ${E2E_SCRAPE_HOLD_S:-} ]]; then printf "export:\n  scrape_interval_s: %s\n" "$E2E_SCRAPE_HOLD_S" >> "$tmp/acmetrace.yaml"; fi

# The reference: the flags of the hour, replayed unpaced through replay --to | process (event time makes them
# the same at every speed; the live run below goes on past the hour until the test stops it).
"$bin" --config "$tmp/first_hour.yaml" replay --data "$tmp/data" --speed max --sink stdout 2> "$tmp/replay.err" |
  "$bin" process 2> "$tmp/process.err" | grep '"acme.anomalies"' > "$tmp/anomalies.jsonl" || true

exporter_port=$(free_port)
prom_port=$(free_port)
python3 "$here/render_prometheus_config.py" --exporter "127.0.0.1:$exporter_port" --interval 15s \
  --out "$tmp/prometheus.yml"
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn > "$tmp/prometheus.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$prom_port"
wait_for 60 curl -fsS -o /dev/null "$url/-/ready" || { echo "short_flags: prometheus did not become ready"; exit 1; }
# Its first scrape of the (not yet listening) exporter: from then on it scrapes every 15 s.
scraped() { curl -fsS "$url/api/v1/query?query=up%7Bjob%3D%22acmetrace%22%7D" | grep -q '"value"'; }
wait_for 40 scraped || { echo "short_flags: prometheus never scraped the exporter's address"; exit 1; }

echo "short_flags: prometheus at $url (15 s scrapes); acmetrace run --speed $speed on 127.0.0.1:$exporter_port"
since=$(date +%s)
"$bin" --config "$tmp/acmetrace.yaml" run --data "$tmp/data" --speed "$speed" --listen "127.0.0.1:$exporter_port" \
  > "$tmp/run.out" 2> "$tmp/run.err" &
pids+=($!)
run_pid=$!
# Until the replay reached the end of the hour (as Prometheus saw it), at most 150 s.
reached_end() {
  kill -0 "$run_pid" || return 2
  python3 - "$url" "$end_s" << 'PY'
import json, sys, urllib.parse, urllib.request
url, end = sys.argv[1], float(sys.argv[2])
q = urllib.parse.urlencode({"query": "min(acmetrace_replay_trace_time_seconds)"})
res = json.load(urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=5))["data"]["result"]
sys.exit(0 if res and float(res[0]["value"][1]) >= end - 120 else 1)
PY
}
deadline=$((SECONDS + 150))
until reached_end; do
  kill -0 "$run_pid" 2> /dev/null || { echo "short_flags: acmetrace run exited early"; exit 1; }
  ((SECONDS < deadline)) || { echo "short_flags: the replay did not reach the end of the hour within 150 s"; exit 1; }
  sleep 2
done
sleep 35  # two more scrapes and rule evaluations: the last flags are scraped and alerted
echo "short_flags: replayed for $(($(date +%s) - since)) s of wall time; checking flags, counters and alerts"
python3 - "$url" "$tmp/anomalies.jsonl" "$tmp/data/faults.csv" "$end_s" "$root/configs/prometheus/rules/anomalies.yml" \
  "$speed" << 'PY'
import csv, json, re, sys, urllib.parse, urllib.request
url, anomalies_path, faults_path, end_s, rules_path, speed = sys.argv[1:7]
end_s, speed = float(end_s), float(speed)

def query(q):
    u = f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    return json.load(urllib.request.urlopen(u, timeout=10))["data"]["result"]

# The reference flags: (cluster, kind, subject) -> [open_s, close_s or None].
flags, opens = {}, {}
for line in open(anomalies_path):
    v = json.loads(line)["value"]
    key = (v["cluster"], v["kind"], v["subject"])
    if v["state"] == "open":
        flags.setdefault(key, []).append([v["ts_ms"] / 1000, None])
        opens[(v["cluster"], v["kind"])] = opens.get((v["cluster"], v["kind"]), 0) + 1
    elif key in flags:
        flags[key][-1][1] = v["ts_ms"] / 1000
failures = []
if not flags:
    failures.append("the processors raised no flag in the hour: nothing to check")

# Every injected fault of the hour is flagged (same cluster, kind and subject).
faults = [r for r in csv.DictReader(open(faults_path)) if float(r["start"]) < end_s - 300]
for f in faults:
    if (f["cluster"], f["kind"], f["subject"]) not in flags:
        failures.append(f"fault {f['cluster']}/{f['kind']}/{f['subject']} at {f['start']} was not flagged")
short = [k for k, spans in flags.items() for o, c in spans if c is not None and (c - o) / speed < 15]
print(f"short_flags: {len(faults)} faults, {len(flags)} flagged subjects, {len(short)} flags shorter than one "
      f"15 s scrape: {sorted('/'.join(k) for k in short)}")
if not short:
    failures.append("no flag of the hour is shorter than a scrape interval: the data no longer tests the issue")

# The alert of each kind, from the shipped rules (alert: NAME ... kind="KIND").
alerts = {}
current = None
for line in open(rules_path):
    m = re.match(r"\s*- alert: (\S+)", line)
    if m:
        current = m.group(1)
    m = re.search(r'kind="([a-z_]+)"', line)
    if m and current and "expr:" in line:
        alerts[m.group(1)] = current

for (cluster, kind, subject), spans in sorted(flags.items()):
    sel = f'cluster="{cluster}",kind="{kind}",subject="{subject}"'
    seen = query(f"max_over_time(acmetrace_anomaly_active{{{sel}}}[1h])")
    value = max((float(r["value"][1]) for r in seen), default=None)
    if value != 1:
        failures.append(f"flag {cluster}/{kind}/{subject} never scraped at 1 (max {value})")
    alert = alerts.get(kind)
    if alert is None:
        failures.append(f"no shipped alert for kind {kind}")
        continue
    fired = query(f'max_over_time(ALERTS{{alertname="{alert}",alertstate="firing",cluster="{cluster}",'
                  f'subject="{subject}"}}[1h])')
    if not fired:
        failures.append(f"alert {alert} never fired for {cluster}/{subject}")
    else:
        print(f"short_flags: {cluster}/{kind}/{subject}: scraped at 1, {alert} fired")
start_s = end_s - 3600
for (cluster, kind), n in sorted(opens.items()):
    sel = f'cluster="{cluster}",kind="{kind}"'
    total = query(f"max(max_over_time(acmetrace_anomalies_total{{{sel}}}[1h]))")
    got = float(total[0]["value"][1]) if total else None
    if got is None or got < n:
        failures.append(f"acmetrace_anomalies_total{{{sel}}} reached {got}, expected at least the hour's {n} flags")
    # The series exists at 0 from the cluster's first record, so increase() counts every flag after the first
    # scrape; only flags of the first 15 trace minutes (the first scrape interval at speed 60) may precede it.
    first = query(f"min(min_over_time(acmetrace_anomalies_total{{{sel}}}[1h]))")
    first = float(first[0]["value"][1]) if first else None
    early = sum(1 for spans in [flags[k] for k in flags if k[:2] == (cluster, kind)] for o, _ in spans
                if o < start_s + 15 * speed)
    if first is None or first > early:
        failures.append(f"acmetrace_anomalies_total{{{sel}}} was first scraped at {first}: born after its first flags")
    inc = query(f"sum(increase(acmetrace_anomalies_total{{{sel}}}[1h]))")
    got_inc = float(inc[0]["value"][1]) if inc else 0
    if got_inc + 0.5 < n - (first or 0):
        failures.append(f"increase(acmetrace_anomalies_total{{{sel}}}[1h]) is {got_inc}, expected >= {n - (first or 0)}")
# Every kind of every cluster has its counter, at 0 if it never flagged.
for row in query("count by (cluster) (acmetrace_anomalies_total)"):
    if float(row["value"][1]) < len(alerts):
        failures.append(f"only {row['value'][1]} anomaly kinds counted for {row['metric']}, expected {len(alerts)}")
for f in failures:
    print("short_flags: FAIL:", f)
sys.exit(1 if failures else 0)
PY
echo "short_flags: ok"
