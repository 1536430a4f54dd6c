#!/usr/bin/env bash
# The paging chain end to end (CTest labels `prometheus` and `alertmanager`): `acmetrace run` -> Prometheus
# (configs/prometheus/prometheus.yml, scraping and evaluating every second) -> Alertmanager
# (configs/alertmanager/alertmanager.yml, the shipped routes, grouping, inhibition and timers) -> the webhook
# of the same `acmetrace run --notifications FILE`, on the first hour of a synthesized day with injected
# faults (seed 17: XID faults) replayed at speed 60. Checks that
#   - each injected XID fault of the hour that lasts at least the shipped group_interval (5 s of wall time, 5
#     trace minutes) is notified: a firing notification carries an alert of its cluster and GPU, at a trace
#     time within the scoring window of the fault ([start - 2 min, end + 10 min]), to the receiver the shipped
#     routes give a gpu-fleet warning (gpu-fleet-tickets). A shorter one may not page: its alert joins a group
#     notified already and can fire and resolve between two flushes, which Alertmanager does not notify (its
#     DedupStage) -- what `score --notifications` is there to show; it is printed, not required; and
#   - `acmetrace score --notifications FILE --faults faults.csv` counts the notified ones as notified, with
#     the time to notify that the file's trace times give.
# The rules are the shipped anomaly and DCGM rules with their `for:` divided by the speed (a tiny sed here;
# `acmetrace rules --speed 60` writes such copies). Everything listens on 127.0.0.1 on free ports, runs in a
# temporary directory and is stopped on exit; about a minute and a half of wall time.
#
# Usage: alertmanager_e2e.sh ACMETRACE_BINARY   (environment: PROMETHEUS, ALERTMANAGER; E2E_KEEP=1 keeps the
# temporary directory)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$(realpath "${1:?usage: alertmanager_e2e.sh ACMETRACE_BINARY}")
prometheus=${PROMETHEUS:-prometheus}
alertmanager=${ALERTMANAGER:-prometheus-alertmanager}
for tool in "$prometheus" "$alertmanager"; do
  command -v "$tool" > /dev/null || { echo "alertmanager_e2e: $tool not found (scripts/setup installs it)"; exit 1; }
done
start_s=1688140800  # 2023-07-01 00:00 +08:00
end_s=$((start_s + 3600))
speed=60

# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
e2e_begin alertmanager_e2e run.err prometheus.log alertmanager.log

echo "alertmanager_e2e: synthesizing a day at scale 0.05 with injected faults (seed 17); replaying its first hour"
"$bin" synth --out "$tmp/data" --days 1 --scale 0.05 --seed 17 --start "$start_s" --inject-faults > "$tmp/synth.log"

exporter_port=$(free_port)
prom_port=$(free_port)
am_port=$(free_port)

# The rules at speed 60: `for: 1m` is a second of wall time. Only the rules whose alerts this hour needs
# (the jobs rules' range selectors would need scaling too).
mkdir -p "$tmp/prom/rules"
cp "$root/configs/prometheus/prometheus.yml" "$tmp/prom/prometheus.yml"
for f in anomalies dcgm; do
  sed -E 's/^( *for: *)1m$/\11s/' "$root/configs/prometheus/rules/$f.yml" > "$tmp/prom/rules/$f.yml"
done
grep -q 'for: 1s' "$tmp/prom/rules/dcgm.yml" || { echo "alertmanager_e2e: dcgm.yml has no for: 1m any more"; exit 1; }
python3 "$here/render_prometheus_config.py" --config "$tmp/prom/prometheus.yml" \
  --exporter "127.0.0.1:$exporter_port" --alertmanager "127.0.0.1:$am_port" --interval 1s --out "$tmp/prom/rendered.yml"
# The shipped Alertmanager config, its webhooks at this run's address.
sed "s#http://127.0.0.1:9400/#http://127.0.0.1:$exporter_port/#" "$root/configs/alertmanager/alertmanager.yml" \
  > "$tmp/alertmanager.yml"
grep -q "127.0.0.1:$exporter_port/alertmanager/webhook" "$tmp/alertmanager.yml" ||
  { echo "alertmanager_e2e: alertmanager.yml posts to no 127.0.0.1:9400/alertmanager/webhook"; exit 1; }

"$alertmanager" --config.file="$tmp/alertmanager.yml" --storage.path="$tmp/am" \
  --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= --log.level=warn > "$tmp/alertmanager.log" 2>&1 &
pids+=($!)
"$prometheus" --config.file="$tmp/prom/rendered.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn > "$tmp/prometheus.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$prom_port"
wait_for 60 curl -fsS -o /dev/null "$url/-/ready" || { echo "alertmanager_e2e: prometheus did not become ready"; exit 1; }
wait_for 60 curl -fsS -o /dev/null "http://127.0.0.1:$am_port/-/ready" ||
  { echo "alertmanager_e2e: alertmanager did not become ready"; exit 1; }

# The exporter holds each closed flag for two of Prometheus's 1 s scrapes; the replay pauses at the hour's end.
printf 'export:\n  scrape_interval_s: 1\n' > "$tmp/acmetrace.yaml"
echo "alertmanager_e2e: prometheus at $url, alertmanager on $am_port, acmetrace run --speed $speed on $exporter_port"
since=$SECONDS
"$bin" --config "$tmp/acmetrace.yaml" run --data "$tmp/data" --speed "$speed" --listen "127.0.0.1:$exporter_port" \
  --pause-at "$end_s" --notifications "$tmp/notifications.jsonl" > "$tmp/run.out" 2> "$tmp/run.err" &
pids+=($!)
run_pid=$!
# The hour is replayed once Prometheus sees the trace time at its end; then a few seconds for the last
# evaluations, group_wait and the webhooks.
reached_end() {
  curl -fsS "$url/api/v1/query" --data-urlencode "query=min(acmetrace_replay_trace_time_seconds) >= $((end_s - 60))" |
    grep -q '"value"'
}
deadline=$((SECONDS + 100))
until reached_end; do
  kill -0 "$run_pid" 2> /dev/null || { echo "alertmanager_e2e: acmetrace run exited early"; exit 1; }
  ((SECONDS < deadline)) || { echo "alertmanager_e2e: the hour was not replayed within 100 s"; exit 1; }
  sleep 1
done
sleep 8
echo "alertmanager_e2e: replayed for $((SECONDS - since)) s of wall time; $(wc -l < "$tmp/notifications.jsonl") notifications"

"$bin" score --notifications "$tmp/notifications.jsonl" --faults "$tmp/data/faults.csv" --from "$start_s" \
  --to "$end_s" --json "$tmp/score.json" > "$tmp/score.txt" 2> "$tmp/score.err" ||
  { cat "$tmp/score.err"; exit 1; }
cat "$tmp/score.txt"
python3 - "$tmp/notifications.jsonl" "$tmp/data/faults.csv" "$tmp/score.json" "$start_s" "$end_s" << 'PY'
import csv, json, sys
notes_path, faults_path, score_path, start_s, end_s = sys.argv[1:6]
start_s, end_s = float(start_s), float(end_s)
notes = [json.loads(line) for line in open(notes_path) if line.strip()]
failures = []
if not notes:
    failures.append("no notification was recorded")
for n in notes:
    # The replay's clock: from the hour's start to its end, and on a little after it while the last alerts resolve.
    if n["trace_ms"] is None or not (start_s * 1000 <= n["trace_ms"] <= end_s * 1000 + 600_000):
        failures.append(f"notification at trace time {n['trace_time']} is not in the replayed hour (or 10 min after)")
# The XID faults of the hour (the last minutes' may not have paged when the replay stopped).
faults = [r for r in csv.DictReader(open(faults_path))
          if r["kind"] == "xid_error" and start_s <= float(r["start"]) < end_s - 300]
group_interval_s = 5 * 60  # the shipped 5 s at speed 60, in trace time
long_faults = [f for f in faults if float(f["end"]) - float(f["start"]) >= group_interval_s]
if len(long_faults) < 2:
    failures.append(f"only {len(long_faults)} XID faults of 5 trace minutes or more in the hour: the data no "
                    "longer tests the chain")
notified = 0

def subject(labels):
    if "subject" in labels:
        return labels["subject"]
    host = labels.get("Hostname")
    return f"{host}-{labels['gpu']}" if host and "gpu" in labels else None

score = json.load(open(score_path))["notifications"]
by_receiver = {r["receiver"]: r for r in score["receivers"]}
for f in faults:
    lo, hi = (float(f["start"]) - 120) * 1000, (float(f["end"]) + 600) * 1000
    hits = [n for n in notes if n["status"] == "firing" and lo <= n["trace_ms"] <= hi and any(
        a["status"] == "firing" and a["labels"].get("cluster") == f["cluster"] and subject(a["labels"]) == f["subject"]
        for a in n["alerts"])]
    name = f"{f['cluster']}/xid_error/{f['subject']} at {f['start']}"
    if not hits:
        if f in long_faults:
            failures.append(f"fault {name} was never notified")
        else:
            print(f"alertmanager_e2e: {name} ({float(f['end']) - float(f['start']):.0f} s) did not page: "
                  "shorter than group_interval")
        continue
    notified += 1
    first = min(hits, key=lambda n: n["trace_ms"])
    ttn = first["trace_ms"] / 1000 - float(f["start"])
    receivers = sorted({n["receiver"] for n in hits})
    print(f"alertmanager_e2e: {name} notified to {receivers} at {first['trace_time']} "
          f"({ttn:+.0f} s of trace time; {len(hits)} notifications)")
    if "gpu-fleet-tickets" not in receivers:
        failures.append(f"fault {name} did not reach gpu-fleet-tickets (the route of gpu-fleet warnings)")
    # score --notifications counts it, with the same time to notify.
    total = [i for i in score["total"]["incidents"]
             if (i["cluster"], i["kind"], i["subject"], i["start"]) == (f["cluster"], "xid_error", f["subject"],
                                                                         int(float(f["start"])))]
    if not total or total[0]["notifications"] < 1:
        failures.append(f"score --notifications does not count {name} as notified: {total}")
    elif abs(total[0]["ttn_s"] - ttn) > 1:
        failures.append(f"score --notifications gives {name} a time to notify of {total[0]['ttn_s']} s, "
                        f"the file {ttn:.0f} s")
tickets = by_receiver.get("gpu-fleet-tickets")
if tickets is None or tickets["incidents_notified"] < notified:
    failures.append(f"score: gpu-fleet-tickets notified {tickets and tickets['incidents_notified']} incidents, "
                    f"the notifications file {notified} XID faults")
for f in failures:
    print("alertmanager_e2e: FAIL:", f)
sys.exit(1 if failures else 0)
PY
echo "alertmanager_e2e: ok"
