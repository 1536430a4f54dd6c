#!/usr/bin/env python3
"""Static checks of the deployment files (CTest label `unit`): every file and path that docker/compose.yaml,
docker/Dockerfile and the Grafana provisioning name exists in the repository; every dashboard JSON parses and
is what grafana/build_dashboards.py writes; every series name in dashboard queries and alert rules is listed in
docs/metrics.md (or is one of Prometheus' own, or a recording rule defined in configs/prometheus/rules);
every anomaly kind has an alert, every alert a promtool test; prometheus.docker.yml is prometheus.yml with the
compose exporter address; the image builds only what runs (no JDK, tests or benchmarks), compose builds it
once, services wait for their topics, the exporter, Prometheus and Grafana have healthchecks; LICENSE exists.

Usage: check_deploy_files.py [REPO_ROOT]     (default: two levels up from this file). Exits 1 naming each problem.
"""
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvidia_dashboard  # noqa: E402
import promql_names  # noqa: E402

# Series Prometheus itself makes (per target, and for alerting rules).
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added",
                     "scrape_samples_post_metric_relabeling", "ALERTS", "ALERTS_FOR_STATE"}
# The services the compose file must define and the official images it must use.
COMPOSE_SERVICES = ["kafka", "replay", "processors", "exporter", "prometheus", "alertmanager", "grafana"]
COMPOSE_IMAGES = {"kafka": "apache/kafka", "prometheus": "prom/prometheus", "alertmanager": "prom/alertmanager",
                  "grafana": "grafana/grafana-oss"}


class Checker:
    def __init__(self, root):
        self.root = root
        self.problems = []
        self.checked = 0

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def read(self, rel):
        with open(self.path(rel), encoding="utf-8") as f:
            return f.read()

    def expect(self, ok, message):
        self.checked += 1
        if not ok:
            self.problems.append(message)
        return ok

    # ---- docs/metrics.md -------------------------------------------------------------------------------
    def documented_names(self):
        text = self.read("docs/metrics.md")
        names = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", text))
        self.expect(any(n.startswith("acmetrace_") for n in names), "docs/metrics.md lists no acmetrace_* series")
        return names

    def documented_kinds(self):
        text = self.read("docs/metrics.md")
        m = re.search(r"Anomaly kinds[^\n]*\n(.*?)\n\n", text, re.S)
        if not self.expect(m is not None, "docs/metrics.md: no 'Anomaly kinds' paragraph"):
            return set()
        return set(re.findall(r"`([a-z_]+)`", m.group(1)))

    # ---- Prometheus ------------------------------------------------------------------------------------
    def rules(self):
        out = []
        for f in sorted(glob.glob(self.path("configs/prometheus/rules/*.yml"))):
            rel = os.path.relpath(f, self.root)
            for kind, name, expr, line in promql_names.rule_entries(open(f, encoding="utf-8").read()):
                self.expect(expr, f"{rel}:{line}: {kind} {name} has no expr")
                out.append((rel, kind, name, expr or "", line))
        self.expect(out, "configs/prometheus/rules/*.yml: no rules")
        return out

    def check_prometheus(self, documented):
        rules = self.rules()
        records = {name for _, kind, name, _, _ in rules if kind == "record"}
        for rel, kind, name, expr, line in rules:
            for series in promql_names.metric_names(expr):
                ok = series in documented or series in PROMETHEUS_SERIES or series in records
                self.expect(ok, f"{rel}:{line}: {kind} {name} reads {series}, which docs/metrics.md does not list")
        alerts = [(rel, name, expr) for rel, kind, name, expr, _ in rules if kind == "alert"]
        # Every anomaly kind has an alert on acmetrace_anomaly_active{kind="..."}.
        for kind in sorted(self.documented_kinds()):
            ok = any("acmetrace_anomaly_active" in e and f'kind="{kind}"' in e for _, _, e in alerts)
            self.expect(ok, f"configs/prometheus/rules: no alert on anomaly kind {kind}")
        # Every alert is exercised by a promtool test.
        tested = set()
        for f in glob.glob(self.path("configs/prometheus/tests/*.yml")):
            tested |= promql_names.tested_alertnames(open(f, encoding="utf-8").read())
        for rel, name, _ in alerts:
            self.expect(name in tested, f"{rel}: alert {name} has no alert_rule_test in configs/prometheus/tests")
        # The compose config is the tested local config with the compose exporter address.
        local = self.config_body("configs/prometheus/prometheus.yml")
        docker = (self.config_body("configs/prometheus/prometheus.docker.yml").replace("exporter:9400", "127.0.0.1:9400")
                  .replace("alertmanager:9093", "127.0.0.1:9093"))
        self.expect(local == docker, "configs/prometheus/prometheus.docker.yml differs from prometheus.yml by more "
                                     "than the exporter and Alertmanager addresses (exporter:9400 vs 127.0.0.1:9400, "
                                     "alertmanager:9093 vs 127.0.0.1:9093)")
        self.expect("127.0.0.1:9400" in local, "configs/prometheus/prometheus.yml does not scrape 127.0.0.1:9400, "
                                               "the default address of docs/metrics.md")
        for needle in ("__param_target", "target_label: instance", "replacement: 127.0.0.1:9400"):
            self.expect(needle in local, f"configs/prometheus/prometheus.yml: multi-target relabelling lacks {needle}")
        for rule_glob in re.findall(r"^\s*-\s*(rules[^/\s]*/\S+)", local, re.M):
            self.expect(glob.glob(self.path("configs/prometheus", rule_glob)),
                        f"configs/prometheus/prometheus.yml: rule_files {rule_glob} matches no file")

    def config_body(self, rel):
        lines = []
        for line in self.read(rel).split("\n"):
            line = re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""
            if line.strip():
                lines.append(line.rstrip())
        return "\n".join(lines)

    # ---- Grafana ---------------------------------------------------------------------------------------
    def dashboards(self):
        out = []
        for f in sorted(glob.glob(self.path("grafana/dashboards/*.json"))):
            rel = os.path.relpath(f, self.root)
            try:
                out.append((rel, json.load(open(f, encoding="utf-8"))))
                self.expect(True, "")
            except ValueError as e:
                self.expect(False, f"{rel}: not valid JSON: {e}")
        self.expect(len(out) >= 4, "grafana/dashboards: expected the four acmetrace dashboards")
        return out

    def check_grafana(self, documented):
        uids = set()
        for rel, d in self.dashboards():
            self.expect(d.get("uid") and d["uid"] not in uids, f"{rel}: missing or duplicate uid")
            uids.add(d.get("uid"))
            variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
            self.expect(variables.get("datasource", {}).get("type") == "datasource",
                        f"{rel}: no datasource variable")
            self.expect("cluster" in variables, f"{rel}: no cluster variable")
            ids = set()
            panels = [p for p in d.get("panels", []) if p.get("type") != "row"]
            self.expect(panels, f"{rel}: no panels")
            for p in panels:
                where = f"{rel}: panel {p.get('title')!r}"
                self.expect(p.get("id") not in ids, f"{where}: duplicate id {p.get('id')}")
                ids.add(p.get("id"))
                self.expect(p.get("datasource", {}).get("uid") == "${datasource}",
                            f"{where}: data source is not ${{datasource}}")
                self.expect(p.get("targets"), f"{where}: no queries")
                for t in p.get("targets", []):
                    expr = t.get("expr", "")
                    self.expect(expr, f"{where}: target {t.get('refId')} has no expr")
                    for series in promql_names.metric_names(expr):
                        self.expect(series in documented or series in PROMETHEUS_SERIES,
                                    f"{where}: query reads {series}, which docs/metrics.md does not list")
            for v in variables.values():
                q = v.get("query")
                q = q.get("query", "") if isinstance(q, dict) else ""
                for series in promql_names.metric_names(re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", q)):
                    self.expect(series in documented, f"{rel}: variable {v['name']} reads {series}, which "
                                                      f"docs/metrics.md does not list")
        # The committed JSON is what the generator writes.
        r = subprocess.run([sys.executable, self.path("grafana/build_dashboards.py"), "--check"],
                           capture_output=True, text=True)
        self.expect(r.returncode == 0, "grafana/dashboards/*.json differ from grafana/build_dashboards.py: "
                                       + (r.stdout + r.stderr).strip())
        # NVIDIA's dashboard: what it needs that the persona serves, and what the release cannot give.
        for series in nvidia_dashboard.SERIES:
            if series in nvidia_dashboard.NOT_IN_RELEASE:
                continue
            self.expect(series in documented, f"NVIDIA dashboard 12239 queries {series}, which docs/metrics.md "
                                              f"does not list")

    # ---- docker ----------------------------------------------------------------------------------------
    def check_docker(self):
        compose_rel = "docker/compose.yaml"
        compose = self.read(compose_rel)
        base = os.path.dirname(self.path(compose_rel))
        services = self.compose_services(compose)
        for name in COMPOSE_SERVICES:
            self.expect(name in services, f"{compose_rel}: no service {name}")
        for name, image in COMPOSE_IMAGES.items():
            self.expect(re.search(rf"image:\s*\S*{re.escape(image)}:", services.get(name, "")),
                        f"{compose_rel}: service {name} does not use the official {image} image")
        # Bind mounts and build paths exist; container paths named elsewhere resolve through the mounts.
        mounts = {}
        for host, container in re.findall(r"^\s*-\s*(\.{1,2}/[^:\s]+):(/[^:\s]+)", compose, re.M):
            host_path = os.path.normpath(os.path.join(base, host))
            self.expect(os.path.exists(host_path), f"{compose_rel}: mounts {host}, which does not exist")
            mounts[container] = host_path
        contexts = re.findall(r"^\s*context:\s*(\S+)", compose, re.M)
        self.expect(contexts, f"{compose_rel}: no build context")
        for context in contexts:
            ctx = os.path.normpath(os.path.join(base, context))
            self.expect(os.path.isdir(ctx), f"{compose_rel}: build context {context} does not exist")
            for dockerfile in re.findall(r"^\s*dockerfile:\s*(\S+)", compose, re.M):
                self.expect(os.path.isfile(os.path.join(ctx, dockerfile)),
                            f"{compose_rel}: dockerfile {dockerfile} does not exist in {context}")
        for container_path in set(re.findall(r"(/(?:etc|var/lib)/[\w./-]+)", compose)):
            if container_path in mounts:
                continue
            for mount, host_path in mounts.items():
                if container_path.startswith(mount + "/"):
                    target = os.path.join(host_path, container_path[len(mount) + 1:])
                    self.expect(os.path.exists(target), f"{compose_rel}: {container_path} is {target}, which "
                                                        f"does not exist")
        # Environment variables the Grafana provisioning reads are set for the grafana service.
        grafana = services.get("grafana", "")
        for rel in glob.glob(self.path("grafana/provisioning/*/*.yml")):
            text = open(rel, encoding="utf-8").read()
            for var in set(re.findall(r"\$\{(\w+)\}", re.sub(r"#.*", "", text))):
                m = re.search(rf"^\s*{var}:\s*(\S+)", grafana, re.M)
                if not self.expect(m, f"{os.path.relpath(rel, self.root)} reads ${{{var}}}, which the compose "
                                      f"grafana service does not set"):
                    continue
                value = m.group(1)
                if value.startswith("/"):
                    self.expect(any(value == c or value.startswith(c + "/") for c in mounts)
                                or re.search(rf"^\s*-\s*[\w-]+:{re.escape(value)}", grafana, re.M),
                                f"{compose_rel}: grafana's {var}={value} is not mounted")
        # The Dockerfile's COPY sources exist in the build context (the repository root).
        dockerfile = self.read("docker/Dockerfile")
        for src in re.findall(r"^COPY\s+(?!--from)(\S+)\s+\S+\s*$", dockerfile, re.M):
            self.expect(src == "." or os.path.exists(self.path(src)), f"docker/Dockerfile: COPY {src}: no such path")
        for script in ("scripts/setup", "scripts/build"):
            self.expect(script in dockerfile, f"docker/Dockerfile does not use {script}")
        self.expect("prometheus" in self.read("scripts/setup").split(), "scripts/setup does not install prometheus")
        self.check_image(dockerfile)
        self.check_compose_startup(compose_rel, compose, services)
        license_text = self.read("LICENSE") if os.path.exists(self.path("LICENSE")) else ""
        self.expect("Apache License" in license_text and "Version 2.0" in license_text,
                    "LICENSE: missing, or not the Apache License 2.0 the README names")

    def check_image(self, dockerfile):
        """The image builds only what runs: the build stage installs build dependencies only and builds the
        binary without tests and benchmarks; the runtime stage gets the binary and its shared libraries."""
        stages = re.split(r"^FROM\s+", dockerfile, flags=re.M)[1:]
        if not self.expect(len(stages) >= 2, "docker/Dockerfile: expected a build stage and a runtime stage"):
            return
        build, runtime = stages[0], stages[-1]
        self.expect("scripts/setup --build-only" in build,
                    "docker/Dockerfile: the build stage installs more than the build needs (use scripts/setup "
                    "--build-only: no JDK, Maven, test or benchmark libraries)")
        for option in ("-DACMETRACE_BUILD_TESTS=OFF", "-DACMETRACE_BUILD_BENCH=OFF"):
            self.expect(option in build, f"docker/Dockerfile: the build stage does not build with {option}")
        self.expect("BUILD_TARGETS=acmetrace" in build, "docker/Dockerfile: the build stage builds more than the "
                                                        "acmetrace binary (BUILD_TARGETS=acmetrace)")
        for word in ("jdk", "java", "maven", "gtest", "gmock", "benchmark", "kcat", "pandas"):
            self.expect(word not in runtime.lower(), f"docker/Dockerfile: the runtime stage mentions {word}")
        copied = re.findall(r"^COPY\s+--from=\S+\s+(\S+)", runtime, re.M)
        self.expect(sorted(copied) == ["/runtime-packages", "/src/build/apps/acmetrace"],
                    f"docker/Dockerfile: the runtime stage copies {copied} from the build stage (only the binary "
                    f"and its runtime package list belong there)")
        # The build packages are a subset of the full setup list, and hold no JDK or test libraries.
        setup = self.read("scripts/setup")
        m = re.search(r"^build_packages=\((.*?)\)", setup, re.M | re.S)
        if self.expect(m, "scripts/setup: no build_packages list (for --build-only)"):
            for word in ("jdk", "maven", "gtest", "gmock", "benchmark"):
                self.expect(word not in m.group(1), f"scripts/setup: build_packages holds {word}")

    def check_compose_startup(self, compose_rel, compose, services):
        """One acmetrace image built once; services that use Kafka wait for their topics; the exporter,
        Prometheus and Grafana have healthchecks, and what depends on them waits for them to be healthy."""
        uses_image = [n for n, b in services.items() if re.search(r"^\s*<<:\s*\*acmetrace\b", b, re.M)]
        self.expect(len(uses_image) >= 4, f"{compose_rel}: expected the acmetrace services to share the "
                                          f"x-acmetrace anchor, found {uses_image}")
        builders = [n for n, b in services.items() if re.search(r"^\s*build:", b, re.M)]
        self.expect(len(builders) == 1, f"{compose_rel}: the acmetrace image must be built by one service, not "
                                        f"{builders or 'none'}")
        anchor = re.search(r"^x-acmetrace:.*?\n((?:^  .*\n)*)", compose, re.M)
        self.expect(anchor and "build:" not in anchor.group(1) and "pull_policy: never" in anchor.group(1),
                    f"{compose_rel}: x-acmetrace must name the image without building it (pull_policy: never)")
        for name in ("replay", "processors", "exporter"):
            block = services.get(name, "")
            self.expect("*after-topics" in block, f"{compose_rel}: {name} does not wait for its topics "
                                                  f"(depends_on <<: *after-topics)")
        after = re.search(r"^x-after-topics:.*?\n((?:^  .*\n)*)", compose, re.M)
        self.expect(after and re.search(r"topics:\s*\{condition:\s*service_completed_successfully\}", after.group(1)),
                    f"{compose_rel}: x-after-topics does not wait for the topics service to complete")
        # The topics service creates what acmetrace itself would (kafka.topics, kafka.partitions).
        topics = services.get("topics", "")
        kafka_config = self.read("core/kafka/src/kafka_config.cc")
        m = re.search(r'kDefaultTopics = "([^"]+)"', kafka_config)
        if self.expect(m, "core/kafka/src/kafka_config.cc: no kDefaultTopics"):
            wanted = m.group(1).split(",")
            listed = re.search(r"for topic in ([\w. ]+?); do", topics)
            self.expect(listed and listed.group(1).split() == wanted,
                        f"{compose_rel}: the topics service does not create {wanted}")
        partitions = re.search(r"partitions = (\d+);", self.read("core/kafka/include/acmetrace/kafka/kafka_config.h"))
        self.expect(partitions and f"--partitions {partitions.group(1)}" in topics,
                    f"{compose_rel}: the topics service's partitions differ from kafka.partitions' default")
        for name, needle in (("exporter", "/-/healthy"), ("prometheus", "/-/healthy"), ("grafana", "/api/health"),
                             ("kafka", "kafka-broker-api-versions")):
            block = services.get(name, "")
            self.expect(re.search(r"^\s*healthcheck:", block, re.M) and needle in block,
                        f"{compose_rel}: {name} has no healthcheck on {needle}")
        for name, dependency in (("prometheus", "exporter"), ("grafana", "prometheus")):
            self.expect(re.search(rf"{dependency}:\s*\{{condition:\s*service_healthy\}}", services.get(name, "")),
                        f"{compose_rel}: {name} does not wait for {dependency} to be healthy")

    @staticmethod
    def compose_services(text):
        """Service name -> its block of text (the lines indented under it in `services:`)."""
        m = re.search(r"^services:\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
        services = {}
        if not m:
            return services
        for block in re.finditer(r"^  ([\w-]+):\n((?:^(?:    .*|\s*)\n)*)", m.group(1), re.M):
            services[block.group(1)] = block.group(2)
        return services


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    c = Checker(root)
    documented = c.documented_names()
    c.check_prometheus(documented)
    c.check_grafana(documented)
    c.check_docker()
    for p in c.problems:
        print("FAIL:", p)
    print(f"{c.checked} checks, {len(c.problems)} problems")
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main())
