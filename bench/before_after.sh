#!/usr/bin/env bash
# Two builds of acmetrace side by side on the hot paths, with no broker: the same output, and the CPU
# each needs. For a change that should move nothing (a refactoring such as issue 26's): run the build
# before it and the build after, interleaved round by round on the same machine.
#
#   bench/before_after.sh OLD_BIN NEW_BIN [--runs N] [--scale F] [--wide-rows N]
#
# Checks first, on a synthesized day with injected faults (`synth --seed 1 --days 1 --scale F`, default 0.05):
#   - `replay --speed max --sink stdout` writes the same bytes with both builds;
#   - `process` (stdin -> stdout) of those lines writes the same bytes;
#   - `run --speed max --until-end --metrics-out` writes the same exposition file;
# and fails (exit 1) on a difference. Then times, N rounds (default 5), OLD then NEW in each:
#   - replay --sink null of a wide Kalos-style GPU_UTIL.csv (make_wide_csv.py util --rows N, default 4000:
#     2,345 GPU columns), the CSV reader's hot path;
#   - replay --sink stdout of the day (reading and rendering JSON);
#   - process of the day's lines from a file (parsing, windows, every detector).
# Prints each side's median CPU seconds (user+sys, /usr/bin/time) and NEW/OLD; CPU seconds swing much
# less than wall time on a shared machine. Data in $ACMETRACE_BENCH_DIR/before_after (.cache/bench).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
(($# >= 2)) || { echo "usage: bench/before_after.sh OLD_BIN NEW_BIN [--runs N] [--scale F] [--wide-rows N]" >&2; exit 2; }
old="$(realpath "$1")" new="$(realpath "$2")"
shift 2
runs=5 scale=0.05 wide_rows=4000
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --scale) scale="$2"; shift 2 ;;
    --wide-rows) wide_rows="$2"; shift 2 ;;
    *) echo "before_after.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for b in "$old" "$new"; do [[ -x "$b" ]] || { echo "before_after.sh: not an executable: $b" >&2; exit 2; }; done
dir="${ACMETRACE_BENCH_DIR:-$root/.cache/bench}/before_after"
mkdir -p "$dir"
day="$dir/day-s$scale"
wide="$dir/wide-$wide_rows"
if [[ ! -d "$day" ]]; then
  "$new" synth --out "$day.tmp" --seed 1 --days 1 --scale "$scale" --inject-faults > /dev/null 2>&1
  mv "$day.tmp" "$day"
fi
if [[ ! -f "$wide/data/utilization/kalos/GPU_UTIL.csv" ]]; then
  python3 "$root/bench/make_wide_csv.py" util --rows "$wide_rows" --out "$wide/data/utilization/kalos/GPU_UTIL.csv"
fi

echo "== same output (day at scale $scale) =="
same() {  # what, then the file each build wrote
  if cmp -s "$2" "$3"; then
    echo "  $1: identical ($(wc -c < "$2") bytes)"
  else
    echo "  $1: DIFFERENT ($2 vs $3)"
    return 1
  fi
}
for side in old new; do
  bin="${!side}"
  "$bin" replay --data "$day" --speed max --sink stdout > "$dir/replay.$side" 2> /dev/null
  "$bin" process < "$dir/replay.$side" > "$dir/process.$side" 2> /dev/null
  "$bin" run --data "$day" --speed max --until-end --listen 127.0.0.1:0 --metrics-out "$dir/metrics.$side" \
    > /dev/null 2>&1
done
status=0
same "replay --sink stdout" "$dir/replay.old" "$dir/replay.new" || status=1
same "process" "$dir/process.old" "$dir/process.new" || status=1
# The exposition holds the build's own identity (acmetrace_build_info) and the run's wall-clock process
# metrics: those lines are left out.
for side in old new; do
  grep -v -E '^(acmetrace_build_info|process_|acmetrace_process_|# )' "$dir/metrics.$side" > "$dir/metrics.$side.cmp" || true
done
same "run --metrics-out" "$dir/metrics.old.cmp" "$dir/metrics.new.cmp" || status=1

cpu() {  # command...: user+sys seconds
  /usr/bin/time -f "%U %S" -o "$dir/time" "$@" > /dev/null 2>&1
  awk '{printf "%.3f\n", $1 + $2}' "$dir/time"
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "== CPU seconds, $runs rounds (old then new in each), load before: $(cut -d' ' -f1-3 /proc/loadavg) =="
declare -A t
for ((i = 1; i <= runs; i++)); do
  for side in old new; do
    bin="${!side}"
    t[wide.$side]+="$(cpu "$bin" replay --data "$wide" --speed max --sink null) "
    t[render.$side]+="$(cpu "$bin" replay --data "$day" --speed max --sink stdout) "
    t[process.$side]+="$(cpu sh -c "\"$bin\" process < \"$dir/replay.old\"") "
  done
done
for what in wide render process; do
  o=$(tr ' ' '\n' <<< "${t[$what.old]}" | grep . | median)
  n=$(tr ' ' '\n' <<< "${t[$what.new]}" | grep . | median)
  case "$what" in
    wide) label="replay --sink null, wide CSV ($wide_rows rows x 2,345 GPUs)" ;;
    render) label="replay --sink stdout, the day" ;;
    process) label="process, the day's lines from a file" ;;
  esac
  printf '  %-52s old %6.3f s  new %6.3f s  new/old %.3f   (old: %s| new: %s)\n' "$label" "$o" "$n" \
    "$(awk -v o="$o" -v n="$n" 'BEGIN {print n / o}')" "${t[$what.old]}" "${t[$what.new]}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
