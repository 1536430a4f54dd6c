#!/usr/bin/env python3
"""Writes grafana/dashboards/*.json, the acmetrace dashboards, from the definitions below.

The JSON files are committed (Grafana provisioning reads them as they are); edit this file and run it
(`python3 grafana/build_dashboards.py`) rather than editing the JSON: tests/deploy/check_deploy_files.py fails when
the two disagree. Every query filters on the `$cluster` variable and uses the `${datasource}` variable, so the
dashboards work against any Prometheus data source holding the series of docs/metrics.md.
"""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}


class Dashboard:
    """A dashboard under construction: panels flow left to right, 24 columns a row."""

    def __init__(self, uid, title, description, tags, variables):
        self.uid, self.title, self.description, self.tags = uid, title, description, tags
        self.variables = variables
        self.panels = []
        self.x = self.y = self.row_h = 0

    def row(self, title):
        self._newline()
        self.panels.append({"type": "row", "title": title, "collapsed": False, "panels": [],
                            "id": len(self.panels) + 1, "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}})
        self.y += 1

    def _newline(self):
        if self.x:
            self.y += self.row_h
            self.x = self.row_h = 0

    def panel(self, kind, title, targets, w=12, h=8, unit=None, description="", options=None, field=None,
              overrides=None, transformations=None):
        if self.x + w > 24:
            self._newline()
        defaults = {"unit": unit} if unit else {}
        defaults.update(field or {})
        panel = {
            "id": len(self.panels) + 1,
            "type": kind,
            "title": title,
            "description": description,
            "datasource": DS,
            "gridPos": {"h": h, "w": w, "x": self.x, "y": self.y},
            "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
            "options": options or {},
            "targets": [dict(t, refId=chr(ord("A") + i), datasource=DS) for i, t in enumerate(targets)],
        }
        if transformations:
            panel["transformations"] = transformations
        self.panels.append(panel)
        self.x += w
        self.row_h = max(self.row_h, h)

    def json(self):
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": ["acmetrace"] + self.tags,
            "editable": True,
            "graphTooltip": 1,
            "refresh": "10s",
            "schemaVersion": 39,
            "time": {"from": "now-30m", "to": "now"},
            "timezone": "browser",
            "templating": {"list": self.variables},
            "annotations": {"list": [{
                "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
                "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
                "type": "dashboard"}]},
            "links": [{"type": "dashboards", "tags": ["acmetrace"], "asDropdown": True, "title": "acmetrace"}],
            "panels": self.panels,
            "version": 1,
        }


def ts(expr, legend="", **extra):
    return dict({"expr": expr, "legendFormat": legend, "range": True, "instant": False}, **extra)


def instant(expr, legend="", fmt="table"):
    return {"expr": expr, "legendFormat": legend, "range": False, "instant": True, "format": fmt}


def datasource_var():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": []}


def query_var(name, label, query, multi=True):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": query, "refId": name}, "definition": query,
            "refresh": 2, "sort": 1, "multi": multi, "includeAll": True, "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "hide": 0, "regex": "",
            "options": []}


CLUSTER_VAR = query_var("cluster", "Cluster", "label_values(acmetrace_replay_trace_time_seconds, cluster)")
C = 'cluster=~"$cluster"'
STACKED = {"custom": {"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 20}}
LEGEND_TABLE = {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"],
                           "showLegend": True}, "tooltip": {"mode": "multi", "sort": "desc"}}


def cluster_overview():
    d = Dashboard("acmetrace-cluster-overview", "AcmeTrace / Cluster overview",
                  "Jobs, GPU allocation against capacity, queueing, failures, utilization and power of the "
                  "replayed Seren and Kalos clusters (acmetrace_* series, docs/metrics.md).",
                  ["jobs"], [datasource_var(), CLUSTER_VAR])
    d.row("Jobs")
    d.panel("timeseries", "Running jobs by type",
            [ts(f"sum by (cluster, type) (acmetrace_jobs_running{{{C}}})", "{{cluster}} {{type}}")],
            unit="short", field=STACKED, description="Jobs started and not ended (acmetrace_jobs_running).")
    d.panel("timeseries", "Pending jobs by type",
            [ts(f"sum by (cluster, type) (acmetrace_jobs_pending{{{C}}})", "{{cluster}} {{type}}")],
            unit="short", field=STACKED, description="Jobs submitted and not started (acmetrace_jobs_pending).")
    d.panel("timeseries", "GPUs allocated, pending and capacity", [
        ts(f"sum by (cluster) (acmetrace_gpus_allocated{{{C}}})", "{{cluster}} allocated"),
        ts(f"sum by (cluster) (acmetrace_gpus_pending{{{C}}})", "{{cluster}} pending"),
        ts(f"sum by (cluster) (acmetrace_gpus_capacity{{{C}}})", "{{cluster}} capacity"),
    ], w=16, unit="short", description="GPUs of running jobs and GPUs requested by pending jobs, against the "
                                        "cluster's GPUs (process.capacity_gpus).",
            overrides=[{"matcher": {"id": "byRegexp", "options": ".*capacity"},
                        "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}]}])
    d.panel("gauge", "GPU allocation",
            [ts(f"max by (cluster) (acmetrace_gpu_allocation_ratio{{{C}}})", "{{cluster}}")],
            w=8, unit="percentunit", field={"min": 0, "max": 1},
            options={"reduceOptions": {"calcs": ["lastNotNull"]}},
            description="Allocated GPUs / cluster GPUs (acmetrace_gpu_allocation_ratio).")
    d.panel("timeseries", "Job submissions and ends (per second, wall clock)", [
        ts(f"sum by (cluster) (rate(acmetrace_jobs_submitted_total{{{C}}}[$__rate_interval]))", "{{cluster}} submitted"),
        ts(f"sum by (cluster) (rate(acmetrace_jobs_started_total{{{C}}}[$__rate_interval]))", "{{cluster}} started"),
        ts(f"sum by (cluster, state) (rate(acmetrace_jobs_finished_total{{{C}, kind=\"gpu\"}}[$__rate_interval]))",
           "{{cluster}} GPU {{state}}"),
    ], unit="ops", description="Rates in wall time: at replay speed N they are N times the trace's rates.")
    d.panel("timeseries", "GPU job failure ratio (last hour)",
            [ts(f"max by (cluster) (acmetrace_job_failure_ratio{{{C}}})", "{{cluster}}")],
            unit="percentunit", field={"min": 0, "max": 1},
            description="Share of GPU jobs ending in the last hour of trace time that ended FAILED, TIMEOUT or "
                        "NODE_FAIL (published long-run: Seren 0.43, Kalos 0.40).")
    d.panel("timeseries", "GPU time of ended jobs by final state",
            [ts(f"sum by (cluster, state) (rate(acmetrace_job_gpu_seconds_total{{{C}}}[$__rate_interval]))",
                "{{cluster}} {{state}}")],
            unit="short", field=STACKED,
            description="Published gpu_time (GPU-seconds) of the jobs ending, per wall second: the release's split "
                        "of GPU time into completed, cancelled and failed as it happens.")
    d.panel("stat", "GPU jobs ended in the last hour",
            [ts(f"max by (cluster) (acmetrace_gpu_jobs_finished_last_hour{{{C}}})", "{{cluster}}")],
            unit="short", options={"reduceOptions": {"calcs": ["lastNotNull"]}, "graphMode": "area"},
            description="The failure ratio's denominator (acmetrace_gpu_jobs_finished_last_hour).")
    d.row("Queueing and run time (GPU jobs, last hour)")
    d.panel("timeseries", "Queue time quantiles",
            [ts(f"max by (cluster, quantile) (acmetrace_job_queue_seconds{{{C}}})", "{{cluster}} p{{quantile}}")],
            unit="s", field={"custom": {"scaleDistribution": {"type": "log", "log": 10}}},
            description="Quantiles (0.5, 0.95, 0.99) of queue time of GPU jobs started in the last hour.")
    d.panel("timeseries", "Run time quantiles",
            [ts(f"max by (cluster, quantile) (acmetrace_job_duration_seconds{{{C}}})", "{{cluster}} p{{quantile}}")],
            unit="s", field={"custom": {"scaleDistribution": {"type": "log", "log": 10}}},
            description="Quantiles of run time of GPU jobs that ended in the last hour.")
    d.row("Utilization and power")
    d.panel("timeseries", "GPU utilization distribution",
            [ts(f"max by (cluster, stat) (acmetrace_cluster_gpu_util_ratio{{{C}}})", "{{cluster}} {{stat}}")],
            unit="percentunit", field={"min": 0, "max": 1},
            description="GPU_UTIL over every GPU sample of the last minute: mean, median and 95th percentile.")
    d.panel("timeseries", "SM and tensor activity (mean)", [
        ts(f"max by (cluster) (acmetrace_cluster_sm_active_ratio{{{C}, stat=\"mean\"}})", "{{cluster}} SM active"),
        ts(f"max by (cluster) (acmetrace_cluster_tensor_active_ratio{{{C}, stat=\"mean\"}})", "{{cluster}} tensor active"),
        ts(f"max by (cluster) (acmetrace_cluster_dram_active_ratio{{{C}, stat=\"mean\"}})", "{{cluster}} DRAM active"),
    ], unit="percentunit", field={"min": 0, "max": 1})
    d.panel("timeseries", "Framebuffer used per GPU",
            [ts(f"max by (cluster, stat) (acmetrace_cluster_fb_used_bytes{{{C}}})", "{{cluster}} {{stat}}")],
            unit="bytes", description="FB_USED over every GPU sample of the last minute: mean, median, 95th percentile.")
    d.panel("timeseries", "InfiniBand traffic (sum over nodes)", [
        ts(f"max by (cluster) (acmetrace_cluster_ib_send_bytes_per_second{{{C}}})", "{{cluster}} send"),
        ts(f"-max by (cluster) (acmetrace_cluster_ib_receive_bytes_per_second{{{C}}})", "{{cluster}} receive"),
    ], unit="Bps", description="NODE_IB_SEND/RECEIVE (Seren only in the release), receive drawn below zero; the "
                               "raw unit is assumed MB/s (export.ib_bytes_per_raw_unit).")
    d.panel("timeseries", "Idle GPUs", [
        ts(f"max by (cluster) (acmetrace_cluster_gpus_idle{{{C}}})", "{{cluster}} idle (GPU_UTIL = 0)"),
        ts(f"max by (cluster) (acmetrace_cluster_gpus_reporting{{{C}}})", "{{cluster}} reporting"),
    ], unit="short")
    d.panel("timeseries", "GPU power (sum over GPUs) and hottest GPU", [
        ts(f"max by (cluster) (acmetrace_cluster_gpu_power_watts{{{C}}})", "{{cluster}} GPU power"),
        ts(f"max by (cluster) (acmetrace_cluster_gpu_temp_max_celsius{{{C}}})", "{{cluster}} hottest GPU"),
    ], unit="watt", overrides=[{"matcher": {"id": "byRegexp", "options": ".*hottest GPU"},
                                "properties": [{"id": "unit", "value": "celsius"},
                                               {"id": "custom.axisPlacement", "value": "right"}]}])
    d.panel("timeseries", "Server power by model (IPMI)",
            [ts(f"max by (cluster, model) (acmetrace_ipmi_power_watts{{{C}}})", "{{cluster}} {{model}}")],
            unit="watt", description="Mean Sys_Total_Power of the IPMI rows of each server model (Seren only).")
    d.panel("timeseries", "Host CPU and memory", [
        ts(f"max by (cluster) (acmetrace_cluster_cpu_util_ratio{{{C}}})", "{{cluster}} CPU"),
        ts(f"max by (cluster) (acmetrace_cluster_memory_util_ratio{{{C}}})", "{{cluster}} memory"),
    ], unit="percentunit", field={"min": 0})
    return d


def gpu_fleet():
    host_var = query_var("Hostname", "Node", 'label_values(DCGM_FI_DEV_GPU_UTIL{cluster=~"$cluster"}, Hostname)')
    d = Dashboard("acmetrace-gpu-fleet", "AcmeTrace / GPU fleet",
                  "Per-node and per-GPU telemetry from the dcgm-exporter persona (DCGM_* series, scraped one "
                  "target per node by the acmetrace-gpu-nodes job).",
                  ["gpu", "dcgm"], [datasource_var(), CLUSTER_VAR, host_var])
    H = f'{C}, Hostname=~"$Hostname"'
    d.row("Fleet")
    d.panel("stat", "GPUs reporting", [ts(f"count(DCGM_FI_DEV_GPU_UTIL{{{H}}})", "GPUs")], w=6, h=5,
            unit="short", options={"reduceOptions": {"calcs": ["lastNotNull"]}, "graphMode": "area"})
    d.panel("stat", "Mean GPU utilization", [ts(f"avg(DCGM_FI_DEV_GPU_UTIL{{{H}}})", "mean")], w=6, h=5,
            unit="percent", options={"reduceOptions": {"calcs": ["lastNotNull"]}, "graphMode": "area"})
    d.panel("stat", "Hottest GPU", [ts(f"max(DCGM_FI_DEV_GPU_TEMP{{{H}}})", "max")], w=6, h=5,
            unit="celsius", options={"reduceOptions": {"calcs": ["lastNotNull"]}, "graphMode": "area"},
            field={"thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "orange", "value": 80}, {"color": "red", "value": 85}]}})
    d.panel("stat", "GPUs showing an XID", [ts(f"count(DCGM_FI_DEV_XID_ERRORS{{{H}}} > 0) or vector(0)", "GPUs")],
            w=6, h=5, unit="short", options={"reduceOptions": {"calcs": ["lastNotNull"]}, "graphMode": "area"},
            field={"thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "red", "value": 1}]}})
    d.row("By node")
    d.panel("timeseries", "GPU utilization by node (mean of its GPUs)",
            [ts(f"avg by (cluster, Hostname) (DCGM_FI_DEV_GPU_UTIL{{{H}}})", "{{Hostname}}")],
            w=24, h=9, unit="percent", field={"min": 0, "max": 100}, options=LEGEND_TABLE)
    d.panel("timeseries", "GPU temperature by node (hottest GPU)",
            [ts(f"max by (cluster, Hostname) (DCGM_FI_DEV_GPU_TEMP{{{H}}})", "{{Hostname}}")],
            w=24, h=9, unit="celsius", options=LEGEND_TABLE)
    d.panel("timeseries", "GPU power by node",
            [ts(f"sum by (cluster, Hostname) (DCGM_FI_DEV_POWER_USAGE{{{H}}})", "{{Hostname}}")],
            unit="watt", options=LEGEND_TABLE)
    d.panel("timeseries", "SM active by node",
            [ts(f"avg by (cluster, Hostname) (DCGM_FI_PROF_SM_ACTIVE{{{H}}})", "{{Hostname}}")],
            unit="percentunit", field={"min": 0, "max": 1}, options=LEGEND_TABLE)
    d.panel("timeseries", "Framebuffer used by node",
            [ts(f"sum by (cluster, Hostname) (DCGM_FI_DEV_FB_USED{{{H}}})", "{{Hostname}}")],
            unit="decmbytes", options=LEGEND_TABLE)
    d.panel("timeseries", "Host CPU by node",
            [ts(f"max by (cluster, Hostname) (acmetrace_node_cpu_util_ratio{{{H}}})", "{{Hostname}}")],
            unit="percentunit", options=LEGEND_TABLE)
    d.row("XID errors and hot GPUs")
    d.panel("state-timeline", "XID codes by GPU",
            [ts(f"max by (Hostname, gpu) (DCGM_FI_DEV_XID_ERRORS{{{H}}} > 0)", "{{Hostname}} GPU {{gpu}}")],
            w=24, h=9, unit="none", description="The code in each GPU's XID register while it is not 0 "
                                                "(DCGM_FI_DEV_XID_ERRORS).",
            options={"showValue": "always", "mergeValues": True, "rowHeight": 0.8})
    d.panel("table", "GPUs with an XID in the time range",
            [instant(f"max by (cluster, Hostname, gpu, UUID) (max_over_time(DCGM_FI_DEV_XID_ERRORS{{{H}}}[$__range])) > 0")],
            unit="none", transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                        "renameByName": {"Value": "last XID"}}}])
    d.panel("table", "Hottest GPUs now",
            [instant(f"topk(10, max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP{{{H}}}))")],
            unit="celsius", transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                           "renameByName": {"Value": "GPU_TEMP"}}}])
    return d


def anomalies():
    kind_var = query_var("kind", "Kind", 'label_values(acmetrace_anomalies_total{cluster=~"$cluster"}, kind)')
    d = Dashboard("acmetrace-anomalies", "AcmeTrace / Anomalies",
                  "Anomaly flags of the stream processors' detectors (acmetrace_anomaly_active, "
                  "acmetrace_anomalies_total) and the alerts they fire.",
                  ["anomalies"], [datasource_var(), CLUSTER_VAR, kind_var])
    K = f'{C}, kind=~"$kind"'
    d.panel("table", "Active flags",
            [instant(f"max by (cluster, kind, subject) (acmetrace_anomaly_active{{{K}}}) == 1")],
            w=12, h=10, transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}}],
            description="Flags open now (and flags shorter than two scrapes, kept at 1 until scraped twice): one row "
                        "per (cluster, kind, subject). A closed flag reads 0 for two scrape intervals before it goes.")
    d.panel("bargauge", "Flags opened in the time range",
            [instant(f"sum by (cluster, kind) (increase(acmetrace_anomalies_total{{{K}}}[$__range]))",
                     "{{cluster}} {{kind}}", fmt="time_series")],
            w=12, h=10, unit="short", options={"displayMode": "gradient", "orientation": "horizontal",
                                               "reduceOptions": {"calcs": ["lastNotNull"]}})
    d.panel("state-timeline", "Flag timeline",
            [ts(f"max by (kind, subject) (acmetrace_anomaly_active{{{K}}}) == 1", "{{kind}} {{subject}}")],
            w=24, h=12, description="When each flag was shown open (every flag for at least two scrape intervals).",
            options={"showValue": "never", "mergeValues": True, "rowHeight": 0.8},
            field={"color": {"mode": "fixed", "fixedColor": "red"}})
    d.panel("timeseries", "Open flags by kind",
            [ts(f"count by (kind) (acmetrace_anomaly_active{{{K}}} == 1)", "{{kind}}")],
            unit="short", field=STACKED)
    d.panel("table", "Firing alerts",
            [instant('max by (alertname, severity, cluster, kind, subject, Hostname, gpu) (ALERTS{alertstate="firing"})')],
            transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}}],
            description="Prometheus' ALERTS series: the rules of configs/prometheus/rules firing now.")
    return d


def replay():
    d = Dashboard("acmetrace-replay", "AcmeTrace / Replay",
                  "The replay itself: trace clock, speed, throughput per stage and topic, lag, input quality "
                  "and the exporter's series.", ["replay"], [datasource_var(), CLUSTER_VAR])
    d.panel("stat", "Trace clock",
            [ts(f"max by (cluster) (acmetrace_replay_trace_time_seconds{{{C}}}) * 1000", "{{cluster}}")],
            w=12, h=5, unit="dateTimeAsIso", options={"reduceOptions": {"calcs": ["lastNotNull"]},
                                                     "graphMode": "none", "textMode": "value_and_name"},
            description="Event time of the newest record of each cluster.")
    d.panel("stat", "Replay speed", [ts("max(acmetrace_replay_speed)", "speed")], w=6, h=5, unit="suffix:×",
            options={"reduceOptions": {"calcs": ["lastNotNull"]}, "graphMode": "none"},
            field={"mappings": [{"type": "value", "options": {"0": {"text": "max (unpaced)"}}}]},
            description="Trace seconds per wall second as configured; 0 = --speed max. Served by acmetrace run only (a separate acmetrace export does not know the replay's speed).")
    d.panel("stat", "Replay lag", [ts("max(acmetrace_replay_lag_seconds)", "lag")], w=6, h=5, unit="s",
            options={"reduceOptions": {"calcs": ["lastNotNull"]}, "graphMode": "area"},
            field={"thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "orange", "value": 10}, {"color": "red", "value": 30}]}})
    d.panel("timeseries", "Effective speed (trace seconds per wall second)",
            [ts(f"max by (cluster) (deriv(acmetrace_replay_trace_time_seconds{{{C}}}[$__rate_interval]))", "{{cluster}}")],
            unit="suffix:×", description="How fast the trace clock actually advances.")
    d.panel("timeseries", "Replay lag behind schedule",
            [ts("max(acmetrace_replay_lag_seconds)", "lag")], unit="s")
    d.panel("timeseries", "Throughput by stage and topic",
            [ts("sum by (stage, topic) (rate(acmetrace_records_total[$__rate_interval]))", "{{stage}} {{topic}}")],
            w=24, unit="reqps", description="Records per second through each stage (replay, process, export).")
    d.panel("timeseries", "Input errors and late records", [
        ts(f"sum by (cluster) (increase(acmetrace_input_errors_total{{{C}}}[$__rate_interval])) "
           f"or sum by (cluster) (0 * acmetrace_replay_trace_time_seconds{{{C}}})", "{{cluster}} input errors"),
        ts(f"sum by (cluster) (increase(acmetrace_late_records_total{{{C}}}[$__rate_interval]))", "{{cluster}} late"),
    ], unit="short", description="Malformed input rows (skipped, named on stderr; by kind: "
                                 "acmetrace_input_errors_total) and records that arrived below the watermark "
                                 "(counted, folded into the oldest open window); 0 when none.")
    d.panel("timeseries", "Exported series", [
        ts("sum by (metric) (acmetrace_series)", "{{metric}}"),
    ], unit="short", options=LEGEND_TABLE,
            description="Series held per metric (bounded by export.max_series_per_metric; "
                        "dropped: acmetrace_series_dropped_total, expired: acmetrace_series_expired_total).")
    d.panel("timeseries", "Series dropped and expired", [
        ts("sum by (metric) (increase(acmetrace_series_expired_total[$__rate_interval]))", "expired {{metric}}"),
        ts("sum by (metric) (increase(acmetrace_series_dropped_total[$__rate_interval])) or vector(0)",
           "dropped {{metric}}"),
    ], unit="short")
    d.panel("timeseries", "Scrape duration", [
        ts('max by (job) (scrape_duration_seconds{job=~"acmetrace.*"})', "{{job}}"),
    ], unit="s", description="How long Prometheus takes to scrape the exporter (per job, slowest target).")
    return d


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dashboards")
    check = "--check" in sys.argv[1:]
    stale = []
    for build in (cluster_overview, gpu_fleet, anomalies, replay):
        d = build()
        text = json.dumps(d.json(), indent=2, ensure_ascii=False) + "\n"
        path = os.path.join(out_dir, d.uid + ".json")
        if check:
            if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
                stale.append(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print("out of date (run python3 grafana/build_dashboards.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
