#!/usr/bin/env bash
# The two ways into a metrics store, side by side in one run (issue 25 §2): one synthesized day (or
# --days N) of both clusters with every metric, backfilled (a) into Prometheus blocks through promtool
# (bench/backfill_day.sh) and (b) by remote write into Debian's VictoriaMetrics, started here on
# 127.0.0.1 with a fresh storage directory. Prints for (b): wall time, samples/s end to end, acmetrace's
# CPU and peak RSS against VictoriaMetrics's (CPU from /proc/PID/stat, peak RSS VmHWM), the store's disk;
# then the ratios: remote write samples/s over the blocks path's (goal >= 5) and acmetrace CPU over the
# store's (goal <= 0.5: the store is the limit, not us).
# --from T --to T: that window of the data only (both paths), e.g. its first hour. The remote_write.*
# settings come from the environment as for any run (ACMETRACE_REMOTE_WRITE_BACKFILL_MAX_SAMPLES_PER_SEND...).
#   bench/remote_write_day.sh [--scale S] [--days N] [--from T --to T] [--build DIR] [--work DIR] [--no-blocks]
set -euo pipefail
scale=1
days=1
build=build
work=${TMPDIR:-/tmp}/acmetrace-bench-backfill
blocks=1
window=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --no-blocks) blocks=0; shift ;;
    --from|--to) window+=("$1" "$2"); shift 2 ;;
    *) echo "usage: bench/remote_write_day.sh [--scale S] [--days N] [--from T --to T] [--build DIR] [--work DIR] [--no-blocks]" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/$build/apps/acmetrace
[[ -x "$bin" ]] || { echo "remote_write_day: $bin not built (scripts/build)" >&2; exit 1; }
command -v victoria-metrics >/dev/null || { echo "remote_write_day: victoria-metrics not installed (scripts/setup)" >&2; exit 1; }
mkdir -p "$work"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# (a) The blocks path; it synthesizes the data set into $work (cached) for both.
blocks_rate=""
if ((blocks)); then
  "$root/bench/backfill_day.sh" --scale "$scale" --days "$days" "${window[@]}" --build "$build" --work "$work" |
    tee "$work/blocks.txt"
  blocks_rate=$(sed -n 's/.* s, \([0-9]*\) samples\/s end to end/\1/p' "$work/blocks.txt")
  promtool_cpu=$(sed -n 's/^  promtool CPU *\([0-9.]*\) s.*/\1/p' "$work/blocks.txt")
fi
# shellcheck source=bench/synth_cached.sh
source "$root/bench/synth_cached.sh"
synth_cached "$bin" "$work" "$days" "$scale"

# (b) Remote write into a fresh VictoriaMetrics.
store=$work/vm-d$days-s$scale
rm -rf "$store"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
victoria-metrics -httpListenAddr="127.0.0.1:$port" -storageDataPath="$store" -retentionPeriod=100y \
  -loggerLevel=ERROR > "$work/vm.log" 2>&1 &
vm=$!
trap 'kill $vm 2>/dev/null; wait $vm 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
ticks=$(getconf CLK_TCK)
vm_cpu() { awk -v t="$ticks" '{ print ($14 + $15) / t }' "/proc/$vm/stat"; }
vm_before=$(vm_cpu)
/usr/bin/time -f "%e %U %S %M" -o "$work/rw-time.txt" "$bin" backfill --data "$data" "${window[@]}" \
  --remote-write "http://127.0.0.1:$port/api/v1/write" > "$work/rw.out" 2> "$work/rw.err" ||
  { tail -5 "$work/rw.err" >&2; exit 1; }
vm_after=$(vm_cpu)
curl -fs "http://127.0.0.1:$port/internal/force_flush" >/dev/null || true
vm_rss_kb=$(awk '/VmHWM/ { print $2 }' "/proc/$vm/status")
read -r wall user sys rss_kb < "$work/rw-time.txt"
sent=$(sed -n 's/.*remote write: [0-9]* series, \([0-9]*\) samples sent.*/\1/p' "$work/rw.err" | tail -1)
[[ -n "$sent" ]] || { echo "remote_write_day: no summary line in $work/rw.err" >&2; tail -3 "$work/rw.err" >&2; exit 1; }
disk_mb=$(du -sm "$store" | cut -f1)
read -r requests mb_sent < <(sed -n 's/.*remote write: .* pending, \([0-9]*\) requests .*, \([0-9.]*\) MB sent.*/\1 \2/p' "$work/rw.err" | tail -1)
awk -v s="$sent" -v w="$wall" -v u="$user" -v sy="$sys" -v rss="$rss_kb" -v vb="$vm_before" -v va="$vm_after" \
    -v vrss="$vm_rss_kb" -v disk="$disk_mb" -v br="$blocks_rate" -v pc="${promtool_cpu:-}" -v scale="$scale" \
    -v days="$days" -v req="${requests:-0}" -v mb="${mb_sent:-0}" 'BEGIN {
  own = u + sy; store = va - vb
  printf "remote write into victoria-metrics, %d day(s) of seren+kalos at scale %s, every metric, 15 s scrapes\n", days, scale
  printf "  samples                 %.0f\n", s
  printf "  wall                    %.1f s, %.0f samples/s end to end\n", w, s / w
  printf "  requests                %d, %.1f MB sent (%.1f bytes per sample, compressed)\n", req, mb, mb * 1e6 / s
  printf "  acmetrace CPU           %.1f s, %.3f us per sample (peak RSS %d MB)\n", own, own * 1e6 / s, rss / 1024
  printf "  victoria-metrics CPU    %.1f s, %.3f us per sample (peak RSS %d MB), store on disk %d MB\n", store, store * 1e6 / s, vrss / 1024, disk
  printf "  acmetrace / store CPU   %.2f (goal <= 0.5)\n", own / store
  if (pc != "") printf "  acmetrace / promtool    %.2f (promtool %.1f s on the blocks path)\n", own / pc, pc
  if (br != "") printf "  samples/s vs blocks     %.1fx (blocks path %d samples/s; goal >= 5x)\n", (s / w) / br, br
}'
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
