#!/usr/bin/env python3
"""Writes copies of promtool rule test files (configs/prometheus/tests/*.yml) for rules scaled by `acmetrace rules
--speed N`: every time of the test divided by N (evaluation_interval, each test's series interval, eval_time), and
rule_files pointing at the scaled rules. The inputs' values are left alone: the series hold the same samples, N times
closer together, so a scaled rule must fire on the same samples as the original, at 1/N of the time. Each series
ends with a staleness marker (see below).

Usage: scale_rule_tests.py --speed 60 --rules DIR --out DIR TEST.yml...
"""
import argparse
import os
import re
import sys

import yaml

UNITS = [("y", 365 * 86400000), ("w", 7 * 86400000), ("d", 86400000), ("h", 3600000), ("m", 60000), ("s", 1000),
         ("ms", 1)]


def parse_ms(text):
    text = str(text)
    if text == "0":
        return 0
    total, pos = 0, 0
    for m in re.finditer(r"(\d+)(ms|y|w|d|h|m|s)", text):
        if m.start() != pos:
            break
        total += int(m.group(1)) * dict(UNITS)[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return total


def format_ms(ms):
    if ms == 0:
        return "0s"
    out = ""
    for unit, size in UNITS:
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out


def scale(text, speed):
    ms = parse_ms(text)
    scaled = ms / speed
    if ms and (scaled < 1 or abs(scaled - round(scaled)) > 1e-9):
        raise ValueError(f"{text} / {speed} is not a whole number of milliseconds: the test cannot be scaled exactly")
    return format_ms(round(scaled))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speed", type=float, required=True)
    ap.add_argument("--rules", required=True, help="the directory of the scaled rule files")
    ap.add_argument("--out", required=True)
    ap.add_argument("tests", nargs="+")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for path in args.tests:
        doc = yaml.safe_load(open(path, encoding="utf-8"))
        doc["rule_files"] = [os.path.join(os.path.abspath(args.rules), os.path.basename(f)) for f in doc["rule_files"]]
        if not all(os.path.exists(f) for f in doc["rule_files"]):  # rules that are not scaled (pipeline.yml)
            print(f"scale_rule_tests: {path}: its rules are not scaled, left out", file=sys.stderr)
            continue
        evaluation_interval = doc.get("evaluation_interval", "1m")  # promtool's defaults
        doc["evaluation_interval"] = scale(evaluation_interval, args.speed)
        for test in doc["tests"]:
            test["interval"] = scale(test.get("interval", evaluation_interval), args.speed)
            # A series whose values end vanished from the scrape. Prometheus's lookback (5 minutes of wall time,
            # which the speed does not shorten) would keep its last value 5 trace hours at speed 60; a live scrape
            # marks it stale at once, and so does this copy (the speed-1 tests lean on the 5 minutes instead).
            for series in test.get("input_series", []):
                series["values"] = str(series["values"]).rstrip() + " stale"
            for case in test.get("alert_rule_test", []) + test.get("promql_expr_test", []):
                case["eval_time"] = scale(case["eval_time"], args.speed)
        with open(os.path.join(args.out, os.path.basename(path)), "w", encoding="utf-8") as f:
            f.write(f"# {os.path.basename(path)} scaled by tests/deploy/scale_rule_tests.py --speed {args.speed:g}\n")
            yaml.safe_dump(doc, f, sort_keys=False, width=1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
