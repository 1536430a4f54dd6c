#!/usr/bin/env python3
"""Writes the data of bench/score_week.sh: a week of 15 s samples as OpenMetrics text (for promtool), the
incidents (faults.csv) and acmetrace's flags for them (anomalies.jsonl, acme.anomalies records).

Series, per cluster (seren, kalos), NODES nodes of 8 GPUs:
  DCGM_FI_DEV_GPU_TEMP{cluster,Hostname,gpu,UUID,modelName}: a daily swing around 55 C with noise; 90 C during
    an overheat; a few 86 C spikes of 3 minutes no one injected (false alarms for a temperature rule);
    no samples from a node during its telemetry gap.
  acmetrace_anomaly_active{cluster,kind,subject}: 0/1 for every subject that has a flag: 1 from a detection
    delay (0-3 min) after an incident starts to a minute after it ends (85 % of incidents), and a few false flags.

  make_score_week.py OUT_DIR [--nodes N] [--days D] [--seed S]
"""
import argparse
import json
import math
import os
import random

T0 = 1688169600  # 2023-07-01T00:00:00Z
STEP = 15


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    end = T0 + args.days * 86400
    os.makedirs(args.out, exist_ok=True)
    incidents = []  # (cluster, kind, subject, start, end)
    flags = {}  # (cluster, kind, subject) -> [(open, close)]
    temps = {}  # (cluster, node, gpu) -> [(start, end, value)] overrides
    gaps = {}  # (cluster, node) -> [(start, end)]
    clusters = ["seren", "kalos"]
    days = args.days
    for cluster in clusters:
        def when(min_len, max_len):
            start = rng.randrange(T0 + 3600, end - 3 * 3600) // 60 * 60
            return start, start + rng.randrange(min_len, max_len + 1) // 60 * 60

        for _ in range(2 * days):  # overheats
            node, gpu = rng.randrange(args.nodes), rng.randrange(8)
            s, e = when(600, 2400)
            subject = f"{cluster}-n{node:03d}-{gpu}"
            incidents.append((cluster, "gpu_overheat", subject, s, e))
            temps.setdefault((cluster, node, gpu), []).append((s, e, 90))
        for _ in range(days):  # natural spikes: nobody's incident
            node, gpu = rng.randrange(args.nodes), rng.randrange(8)
            s = rng.randrange(T0 + 3600, end - 3600) // 60 * 60
            temps.setdefault((cluster, node, gpu), []).append((s, s + 180, 86))
        for _ in range(days):  # XID errors (flags only: no DCGM XID series here)
            node, gpu = rng.randrange(args.nodes), rng.randrange(8)
            s, e = when(300, 900)
            incidents.append((cluster, "xid_error", f"{cluster}-n{node:03d}-{gpu}", s, e))
        for _ in range(max(1, days // 2)):  # telemetry gaps
            node = rng.randrange(args.nodes)
            s, e = when(600, 1800)
            incidents.append((cluster, "telemetry_gap", f"{cluster}-n{node:03d}", s, e))
            gaps.setdefault((cluster, node), []).append((s, e))
        for _ in range(max(1, days // 2)):  # utilisation drops
            s, e = when(900, 2700)
            incidents.append((cluster, "util_drop", cluster, s, e))
    incidents.sort(key=lambda i: (i[3], i[0], i[1], i[2]))
    for cluster, kind, subject, s, e in incidents:
        if rng.random() < 0.85:
            flags.setdefault((cluster, kind, subject), []).append((s + rng.randrange(0, 181) // STEP * STEP, e + 60))
    for cluster in clusters:  # false flags
        for _ in range(days):
            node, gpu = rng.randrange(args.nodes), rng.randrange(8)
            s = rng.randrange(T0 + 3600, end - 3600) // 60 * 60
            flags.setdefault((cluster, "gpu_straggler", f"{cluster}-n{node:03d}-{gpu}"), []).append((s, s + 600))

    with open(os.path.join(args.out, "faults.csv"), "w") as f:
        f.write("cluster,kind,subject,start,end\n")
        for i in incidents:
            f.write("%s,%s,%s,%d,%d\n" % i)
    with open(os.path.join(args.out, "anomalies.jsonl"), "w") as f:
        events = []
        for (cluster, kind, subject), spans in flags.items():
            for s, e in spans:
                events.append((s * 1000, cluster, kind, subject, "open"))
                events.append((e * 1000, cluster, kind, subject, "close"))
        for ts, cluster, kind, subject, state in sorted(events):
            f.write(json.dumps({"v": 1, "cluster": cluster, "kind": kind, "subject": subject, "state": state,
                                "ts_ms": ts}, separators=(",", ":")) + "\n")

    times = range(T0, end, STEP)
    samples = 0
    with open(os.path.join(args.out, "week.om"), "w", buffering=1 << 22) as f:
        f.write("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n")
        for cluster in clusters:
            for node in range(args.nodes):
                node_gaps = gaps.get((cluster, node), [])
                for gpu in range(8):
                    labels = ('DCGM_FI_DEV_GPU_TEMP{cluster="%s",Hostname="%s-n%03d",gpu="%d",UUID="GPU-%s-%03d-%d",'
                              'modelName="NVIDIA A100-SXM4-80GB"} ' % (cluster, cluster, node, gpu, cluster, node, gpu))
                    over = temps.get((cluster, node, gpu), [])
                    base = 50 + rng.random() * 8
                    lines = []
                    for t in times:
                        if node_gaps and any(s <= t < e for s, e in node_gaps):
                            continue
                        v = base + 8 * math.sin((t - T0) * 2 * math.pi / 86400) + rng.random() * 2
                        for s, e, hot in over:
                            if s <= t < e:
                                v = hot
                        lines.append("%s%d %d\n" % (labels, v, t))
                    f.write("".join(lines))
                    samples += len(lines)
        f.write("# TYPE acmetrace_anomaly_active gauge\n")
        for (cluster, kind, subject), spans in sorted(flags.items()):
            labels = 'acmetrace_anomaly_active{cluster="%s",kind="%s",subject="%s"} ' % (cluster, kind, subject)
            lines = []
            for t in times:
                on = any(s <= t < e for s, e in spans)
                lines.append("%s%d %d\n" % (labels, 1 if on else 0, t))
            f.write("".join(lines))
            samples += len(lines)
        f.write("# EOF\n")
    series = len(clusters) * args.nodes * 8 + len(flags)
    print(f"make_score_week: {series} series, {samples} samples, {len(incidents)} incidents, "
          f"{sum(len(s) for s in flags.values())} flags in {args.out}")


if __name__ == "__main__":
    main()
