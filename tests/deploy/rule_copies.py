#!/usr/bin/env python3
"""Rule files with quirks, read by acmetrace and by Prometheus's tools (CTest label `prometheus`).

For each file of tests/fixtures/rule_files/, its first line says what must happen:
  # expect: same                 acmetrace rules writes a copy; promtool accepts the file and the copy; and the
                                 copy at speed 1 decodes to the same YAML tree as the file (PyYAML: YAML 1.1, as
                                 Prometheus's yaml.v3 reads it), at speed 60 to the same names, labels and
                                 annotations.
  # expect: refused: TEXT        acmetrace rules refuses it, with TEXT in its one-line error; and the second line,
  # promtool: accepts|refuses    says what promtool does with it (where acmetrace is stricter, it says so).
Usage: rule_copies.py ACMETRACE PROMTOOL FIXTURE_DIR
"""
import pathlib
import subprocess
import sys
import tempfile

import yaml


def run(args):
    return subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=60)


def names_labels_annotations(tree):
    return [(rule.get("alert") or rule.get("record"), rule.get("labels"), rule.get("annotations"))
            for group in tree["groups"] for rule in group.get("rules") or []]


def check(acmetrace, promtool, fixture, work):
    lines = fixture.read_text(encoding="utf-8", errors="replace").splitlines()
    expect = lines[0].removeprefix("# expect: ")
    copies = {}
    for speed in ("1", "60"):
        out = work / f"{fixture.stem}-{speed}"
        result = run([acmetrace, "rules", "--speed", speed, "--out", str(out), str(fixture)])
        if expect.startswith("refused: "):
            want = expect.removeprefix("refused: ")
            error = result.stderr.strip().splitlines()
            if result.returncode != 1 or len(error) != 1 or want not in error[0]:
                return f"expected exit 1 and one line with {want!r}, got {result.returncode}: {result.stderr!r}"
            promtool_says = lines[1].removeprefix("# promtool: ").split()[0]
            accepted = run([promtool, "check", "rules", str(fixture)]).returncode == 0
            if accepted != (promtool_says == "accepts"):
                return f"the fixture says promtool {promtool_says} it, but promtool {'accepts' if accepted else 'refuses'} it"
            return None
        if expect != "same":
            return f"unknown expectation {expect!r}"
        if result.returncode != 0:
            return f"acmetrace rules --speed {speed} failed: {result.stderr.strip()}"
        copies[speed] = out / fixture.name
    for path in (fixture, copies["1"], copies["60"]):
        checked = run([promtool, "check", "rules", str(path)])
        if checked.returncode != 0:
            return f"promtool check rules {path.name} (speed {path.parent.name}): {checked.stdout}{checked.stderr}"
    original = yaml.safe_load(fixture.read_text(encoding="utf-8"))
    at_speed_1 = yaml.safe_load(copies["1"].read_text(encoding="utf-8"))
    if at_speed_1 != original:
        return f"the copy at speed 1 reads differently:\n{at_speed_1!r}\nagainst\n{original!r}"
    at_speed_60 = yaml.safe_load(copies["60"].read_text(encoding="utf-8"))
    if names_labels_annotations(at_speed_60) != names_labels_annotations(original):
        return "the copy at speed 60 has other names, labels or annotations"
    return None


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    acmetrace, promtool, fixtures = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    failed = 0
    files = sorted(fixtures.glob("*.yml"))
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in files:
            problem = check(acmetrace, promtool, fixture, pathlib.Path(tmp))
            print(f"{fixture.name}: {'ok' if problem is None else 'FAILED: ' + problem}")
            failed += problem is not None
    if not files:
        print(f"no rule files in {fixtures}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
