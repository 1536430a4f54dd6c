#!/usr/bin/env python3
"""Checks the dashboards against a running Prometheus (CTest label `prometheus`):

1. every query of every panel of every dashboard in grafana/dashboards returns data over the checked time range
   (template variables substituted as Grafana does with "All" selected; each query variable must have values);
   NVIDIA's dcgm-exporter dashboard (12239) has what it reads: DCGM_* series by Hostname and gpu, one instance
   per server (skip with --no-nvidia);
2. with --data DIR, the alert for an injected fault of DIR/faults.csv fired: for each fault the replay has
   reached, the alert on its kind (the rule reading acmetrace_anomaly_active{kind="..."}) with its cluster and
   subject, from Prometheus' ALERTS series (alertstate="firing") and GET /api/v1/alerts.

Usage: panels_return_data.py --prometheus http://127.0.0.1:9090 [--since UNIX_SECONDS] [--until UNIX_SECONDS] [--data DIR]
                             [--dashboards DIR] [--rules DIR] [--min-faults N] [--grace SECONDS]
                             [--allow-empty REGEX] [--no-nvidia]
Prints one line per failure naming the dashboard and panel (or the fault) and exits 1 if there is any.
"""
import argparse
import csv
import glob
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvidia_dashboard  # noqa: E402
import promql_names  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Prometheus:
    def __init__(self, base):
        self.base = base.rstrip("/")

    def get(self, path, post=False, **params):
        """GET (or form POST) an API path; returns its "data" or raises RuntimeError with Prometheus' error."""
        query = urllib.parse.urlencode(params, doseq=True)
        url = f"{self.base}{path}" + ("" if post or not query else f"?{query}")
        req = urllib.request.Request(url, data=query.encode() if post else None, method="POST" if post else "GET")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            text = e.read().decode()
        try:
            body = json.loads(text)
        except ValueError:
            raise RuntimeError(f"{path}: not a Prometheus API answer: {text[:200]!r}")
        if body.get("status") != "success":
            raise RuntimeError(f"{path}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query_range(self, expr, start, end, step):
        return self.get("/api/v1/query_range", post=True, query=expr, start=start, end=end, step=step)["result"]

    def label_values(self, label, match, start, end):
        return self.get(f"/api/v1/label/{label}/values", **{"match[]": match, "start": start, "end": end})


def resolve_variables(prom, dashboard, start, end, problems, name):
    """Values for the dashboard's variables, as Grafana sends them with "All" selected."""
    values = {}
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "datasource":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        m = re.match(r"^\s*label_values\((.*),\s*(\w+)\s*\)\s*$", q)
        if not m:
            problems.append(f"{name}: variable {v.get('name')}: unsupported query {q!r}")
            continue
        match = substitute(m.group(1), values, start, end)
        found = prom.label_values(m.group(2), match, start, end)
        if not found:
            problems.append(f"{name}: variable ${v['name']} has no values ({q})")
        if v.get("includeAll") and v.get("allValue"):
            values[v["name"]] = v["allValue"]
        elif v.get("includeAll") or v.get("multi"):
            values[v["name"]] = "(" + "|".join(re.escape(x) for x in found) + ")" if found else ".*"
        else:
            values[v["name"]] = found[0] if found else ""
    return values


def substitute(expr, values, start, end, rate_interval="1m"):
    builtins = {"__rate_interval": rate_interval, "__interval": "15s", "__range": f"{max(1, int(end - start))}s",
                "__range_s": str(max(1, int(end - start)))}
    all_values = dict(values, **builtins)

    def repl(m):
        key = m.group(1) or m.group(2)
        return all_values.get(key, m.group(0))

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", repl, expr)


def check_panels(prom, dashboards_dir, start, end, step, rate_interval, allow_empty=None):
    problems, checked = [], 0
    for path in sorted(glob.glob(os.path.join(dashboards_dir, "*.json"))):
        dashboard = json.load(open(path, encoding="utf-8"))
        name = f"{dashboard.get('title')} ({os.path.basename(path)})"
        values = resolve_variables(prom, dashboard, start, end, problems, name)
        for panel in dashboard.get("panels", []):
            if panel.get("type") == "row":
                continue
            for target in panel.get("targets", []):
                expr = substitute(target.get("expr", ""), values, start, end, rate_interval)
                checked += 1
                try:
                    result = prom.query_range(expr, start, end, step)
                except RuntimeError as e:
                    problems.append(f"{name}: panel {panel.get('title')!r} query {target.get('refId')}: error {e}")
                    continue
                if not any(series.get("values") for series in result):
                    if allow_empty and re.search(allow_empty, panel.get("title", "")):
                        print(f"{name}: panel {panel.get('title')!r} query {target.get('refId')}: no data (allowed)")
                        continue
                    problems.append(f"{name}: panel {panel.get('title')!r} query {target.get('refId')} returned no "
                                    f"data: {expr}")
    return problems, checked


def check_nvidia_dashboard(prom, start, end, step):
    """NVIDIA's dcgm-exporter dashboard works on the persona: its variables have values, each series it reads
    (that the release has) exists per Hostname and gpu, and each server is its own Prometheus instance."""
    problems, checked = [], 0
    hosts = prom.label_values("Hostname", nvidia_dashboard.VARIABLE_SERIES, start, end)
    checked += 1
    if not hosts:
        problems.append(f"NVIDIA dashboard 12239: its Hostname variable (label_values({nvidia_dashboard.VARIABLE_SERIES}, "
                        f"Hostname)) has no values")
    for series in nvidia_dashboard.SERIES:
        if series in nvidia_dashboard.NOT_IN_RELEASE or series in nvidia_dashboard.OPT_IN:
            continue  # opt-in series: the persona's unit tests check them (this run uses the defaults)
        checked += 1
        labels = ", ".join(nvidia_dashboard.LABELS + ("instance",))
        result = prom.query_range(f"count by ({labels}) ({series})", start, end, step)
        if not result:
            problems.append(f"NVIDIA dashboard 12239: no {series} series")
            continue
        bad = [r["metric"] for r in result if any(not r["metric"].get(l) for l in nvidia_dashboard.LABELS)
               or r["metric"].get("instance") != r["metric"].get("Hostname")]
        if bad:
            problems.append(f"NVIDIA dashboard 12239: {series} series without Hostname/gpu or not one instance per "
                            f"server, e.g. {bad[0]}")
    return problems, checked


def alert_for_kind(rules_dir):
    """Anomaly kind -> alert name, from the rules that read acmetrace_anomaly_active{kind="..."}."""
    out = {}
    for path in glob.glob(os.path.join(rules_dir, "*.yml")):
        for kind, name, expr, _ in promql_names.rule_entries(open(path, encoding="utf-8").read()):
            m = re.search(r'acmetrace_anomaly_active\{[^}]*kind="(\w+)"', expr or "")
            if kind == "alert" and m:
                out[m.group(1)] = name
    return out


def check_faults(prom, data_dir, rules_dir, start, end, step, min_faults, grace):
    """Alerts fired for the injected faults the replay reached at least `grace` trace seconds past their start
    (a flag opens after the detector's open_for_s and the window's close). Returns (problems, report lines)."""
    kinds = alert_for_kind(rules_dir)
    with open(os.path.join(data_dir, "faults.csv"), encoding="utf-8") as f:
        faults = [r for r in csv.DictReader(f)]
    trace = prom.query_range("max by (cluster) (acmetrace_replay_trace_time_seconds)", start, end, step)
    reached = {s["metric"].get("cluster"): max(float(v) for _, v in s["values"]) for s in trace}
    fired = {}
    for s in prom.query_range('ALERTS{alertstate="firing"}', start, end, step):
        m = s["metric"]
        fired.setdefault(m.get("alertname"), set()).add((m.get("cluster"), m.get("subject")))
    now_firing = {(a["labels"].get("alertname"), a["labels"].get("cluster"), a["labels"].get("subject"))
                  for a in prom.get("/api/v1/alerts")["alerts"] if a.get("state") == "firing"}
    report, due, hits, missing_rule = [], 0, 0, set()
    for f in faults:
        if float(f["start"]) + grace > reached.get(f["cluster"], 0):
            continue  # not replayed yet, or too recently for its flag to open
        alert = kinds.get(f["kind"])
        if alert is None:
            missing_rule.add(f["kind"])
            continue
        due += 1
        hit = (f["cluster"], f["subject"]) in fired.get(alert, set())
        hits += hit
        state = "fired" if hit else "did not fire"
        if (alert, f["cluster"], f["subject"]) in now_firing:
            state += ", firing now (/api/v1/alerts)"
        report.append(f"fault {f['cluster']} {f['kind']} {f['subject']} [{f['start']}, {f['end']}]: {alert} {state}")
    problems = [f"faults.csv kind {k} has no alert rule on acmetrace_anomaly_active" for k in sorted(missing_rule)]
    if due == 0:
        problems.append(f"no fault of {data_dir}/faults.csv was reached by the replay {grace:.0f} s past its start "
                        f"(trace time {reached})")
    elif hits < min(min_faults, due):
        problems.append(f"alerts fired for {hits} of {due} replayed faults; at least {min(min_faults, due)} needed")
    report.append(f"alerts fired for {hits} of {due} replayed faults")
    return problems, report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prometheus", required=True, help="base URL, e.g. http://127.0.0.1:9090")
    ap.add_argument("--since", type=float, help="start of the checked range, unix seconds (default: 10 minutes ago)")
    ap.add_argument("--until", type=float,
                    help="end of the checked range, unix seconds (default: now; a backfilled trace: its own dates)")
    ap.add_argument("--data", help="data directory with faults.csv: check that alerts fired for its faults")
    ap.add_argument("--dashboards", default=os.path.join(ROOT, "grafana", "dashboards"))
    ap.add_argument("--rules", default=os.path.join(ROOT, "configs", "prometheus", "rules"))
    ap.add_argument("--min-faults", type=int, default=1, help="replayed faults whose alert must have fired")
    ap.add_argument("--grace", type=float, default=300,
                    help="trace seconds past a fault's start before its alert is expected (default 300)")
    ap.add_argument("--step", type=float, default=1.0, help="query_range step, seconds")
    ap.add_argument("--allow-empty", metavar="REGEX",
                    help="panels whose title matches may have no data (e.g. the replay's speed and lag, which only "
                         "acmetrace run serves)")
    ap.add_argument("--no-nvidia", action="store_true",
                    help="skip the checks that NVIDIA's dcgm-exporter dashboard works on the persona series")
    ap.add_argument("--rate-interval", default="1m", help="value of $__rate_interval")
    args = ap.parse_args()

    prom = Prometheus(args.prometheus)
    end = args.until if args.until else time.time()
    start = args.since if args.since else end - 600
    problems, checked = check_panels(prom, args.dashboards, start, end, args.step, args.rate_interval,
                                     args.allow_empty)
    print(f"panels: {checked} queries checked over {end - start:.0f} s, {len(problems)} without data or failing")
    if not args.no_nvidia:
        nvidia_problems, nvidia_checked = check_nvidia_dashboard(prom, start, end, args.step)
        print(f"NVIDIA dashboard 12239: {nvidia_checked} checks, {len(nvidia_problems)} failing")
        problems += nvidia_problems
    if args.data:
        fault_problems, report = check_faults(prom, args.data, args.rules, start, end, args.step, args.min_faults,
                                              args.grace)
        for line in report:
            print(line)
        problems += fault_problems
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
