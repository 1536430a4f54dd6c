#!/usr/bin/env bash
# The shipped rules at replay speed (CTest label `prometheus`): configs/prometheus/rules-60x/ is what
# scripts/scaled-rules writes today (byte for byte), for the speed `acmetrace run` uses by default; the shipped
# prometheus.yml loads it (and rules/pipeline.yml, acmetrace's own health in wall time, unscaled) with the
# intervals `acmetrace rules` prints; `promtool check rules` accepts every
# scaled file; and the promtool rule tests of configs/prometheus/tests/ pass on the scaled rules with their times
# scaled alike (tests/deploy/scale_rule_tests.py: the same samples N times closer together), so that each scaled
# rule fires on the same samples as its original. Seconds of wall time.
#   scaled_rules.sh ACMETRACE_BINARY PROMTOOL
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$1
promtool=${2:-promtool}
speed=60
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "scaled_rules: $*" >&2; exit 1; }

# Into a file, not a pipe: grep -q leaving early would make the writer's SIGPIPE fail the test (pipefail).
"$bin" config --defaults > "$tmp/defaults.yaml"
grep -q "^  default_speed: $speed\$" "$tmp/defaults.yaml" ||
  fail "run.default_speed is no longer $speed: regenerate configs/prometheus/rules-*x for it (scripts/scaled-rules)"
"$root/scripts/scaled-rules" --bin "$bin" --out "$tmp/rules" > "$tmp/scaled.out" 2> "$tmp/scaled.err" ||
  fail "scripts/scaled-rules failed: $(cat "$tmp/scaled.err")"
[[ ! -s "$tmp/scaled.err" ]] || fail "acmetrace rules warns about a shipped rule: $(cat "$tmp/scaled.err")"
diff -r "$root/configs/prometheus/rules-${speed}x" "$tmp/rules" > "$tmp/diff" ||
  fail "configs/prometheus/rules-${speed}x is not what scripts/scaled-rules writes now: run it and commit"$'\n'"$(head -40 "$tmp/diff")"

# prometheus.yml: the scaled rules, and every interval line acmetrace rules printed.
config=$root/configs/prometheus/prometheus.yml
grep -q "^  - rules-${speed}x/\*\.yml" "$config" || fail "prometheus.yml does not load rules-${speed}x/*.yml"
direct=$(sed -n 's/^  - \(rules\/[^ ]*\).*/\1/p' "$config")
[[ $direct == rules/pipeline.yml ]] ||
  fail "prometheus.yml loads speed-1 rules other than rules/pipeline.yml (acmetrace's own health): $direct"
for f in "$root"/configs/prometheus/rules/*.yml; do
  name=$(basename "$f")
  [[ -f "$tmp/rules/$name" || $name == pipeline.yml ]] || fail "rules/$name is neither scaled nor loaded"
done
for key in scrape_interval scrape_timeout evaluation_interval; do
  want=$(sed -n "s/^  $key: \([^ ]*\).*/\1/p" "$tmp/scaled.out")
  [[ -n "$want" ]] || fail "acmetrace rules printed no $key"
  grep -q "^  $key: $want\b" "$config" || fail "prometheus.yml: $key is not $want, as acmetrace rules --speed $speed says"
done

"$promtool" check rules "$tmp/rules"/*.yml > "$tmp/check.out" 2>&1 || fail "promtool check rules: $(cat "$tmp/check.out")"
python3 "$here/scale_rule_tests.py" --speed "$speed" --rules "$tmp/rules" --out "$tmp/tests" "$root"/configs/prometheus/tests/*.yml
[[ -n $(ls "$tmp/tests") ]] || fail "no rule test was scaled"
"$promtool" test rules "$tmp/tests"/*.yml > "$tmp/test.out" 2>&1 ||
  fail "promtool test rules on the rules and tests scaled to speed $speed:"$'\n'"$(cat "$tmp/test.out")"
echo "scaled_rules: rules-${speed}x is current, prometheus.yml loads it, promtool checks and tests pass at speed $speed"
