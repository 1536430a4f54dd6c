#!/usr/bin/env bash
# Processor throughput: `acmetrace process --source kafka --until-end` (every metric and detector on) against
# `kcat -C` reading the same topics raw, from the same local broker; then the processor's peak RSS over a
# simulated week (synth -> replay --sink stdout -> process --source stdin, under /usr/bin/time -v).
#
#   bench/process_throughput.sh [--scale F] [--days N] [--clusters C] [--metrics M] [--issue14] [--runs N]
#                               [--week-scale F] [--no-week] [--bin PATH]
#
#   --scale F, --days N  the data set read from Kafka (`acmetrace synth --seed 1`), default a day at scale 0.05
#   --clusters C         `synth --clusters` (default both, seren,kalos)
#   --metrics M          `synth --metrics` (default all)
#   --issue14            issue 14's configuration: a day of Seren at scale 0.3 with five GPU metrics
#                        (--scale 0.3 --clusters seren --metrics GPU_UTIL,GPU_TEMP,POWER_USAGE,SM_ACTIVE,XID_ERRORS):
#                        ~500k records, five 8-value arrays in every util record
#   --runs N             rounds (default 3) after one warm-up round that is not counted (the first process run
#                        creates the ownership topic; the broker's read path warms up): each round kcat then
#                        acmetrace, each with a fresh consumer; medians, and the median of the rounds' ratios
#   --week-scale F       scale of the simulated week (default 0.2, seren only, as `synth --days 7 --scale 0.2`)
#   --no-week            skip the week
#   --bin PATH           the acmetrace binary (default build/apps/acmetrace)
#
# Goal: acmetrace records/s >= 0.5 x kcat records/s. kcat only moves bytes (-q -f '%o\n' to /dev/null is no
# cheaper than -f '%s\n'); acmetrace parses every record, keeps the watermark, applies every metric, runs
# every detector and writes its windows (to /dev/null). Each side's CPU seconds (user+sys of the processes,
# from /usr/bin/time) are printed per million records next to records/s: on a shared 2-core machine wall
# times swing, CPU seconds much less. Data cached in $ACMETRACE_BENCH_DIR/process (.cache/bench).
# Needs acmetrace, kcat, java (scripts/kafka-local), /usr/bin/time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/apps/acmetrace"
kafka_local="$root/scripts/kafka-local"
bench_dir="${ACMETRACE_BENCH_DIR:-$root/.cache/bench}/process"
scale=0.05 days=1 runs=3 week_scale=0.2 week=1 clusters="" metrics=""
while (($#)); do
  case "$1" in
    --scale) scale="$2"; shift 2 ;;
    --days) days="$2"; shift 2 ;;
    --clusters) clusters="$2"; shift 2 ;;
    --metrics) metrics="$2"; shift 2 ;;
    --issue14) scale=0.3 clusters=seren metrics=GPU_UTIL,GPU_TEMP,POWER_USAGE,SM_ACTIVE,XID_ERRORS; shift ;;
    --runs) runs="$2"; shift 2 ;;
    --week-scale) week_scale="$2"; shift 2 ;;
    --no-week) week=0; shift ;;
    --bin) bin="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "process_throughput: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "process_throughput: $bin missing: run scripts/build" >&2; exit 1; }
command -v kcat >/dev/null || { echo "process_throughput: kcat missing (apt-get install kcat)" >&2; exit 1; }
mkdir -p "$bench_dir"
cp "$bin" "$bench_dir/acmetrace.bin"  # a rebuild during the benchmark does not pull it from under us
bin="$bench_dir/acmetrace.bin"
log() { echo "process_throughput: $*" >&2; }
now_ns() { date +%s%N; }
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

data="$bench_dir/synth-d$days-s$scale"
synth_args=()
if [[ -n "$clusters" ]]; then data+="-${clusters//,/+}"; synth_args+=(--clusters "$clusters"); fi
if [[ -n "$metrics" ]]; then data+="-m$(cksum <<<"$metrics" | cut -d' ' -f1)"; synth_args+=(--metrics "$metrics"); fi
if [[ ! -f "$data/.done" ]]; then
  log "generating $data"
  rm -rf "$data"
  "$bin" synth --out "$data" --days "$days" --scale "$scale" --seed 1 "${synth_args[@]}" >&2
  touch "$data/.done"
fi

boot="$("$kafka_local" --port 0 start)"
port="${boot##*:}"
trap '"$kafka_local" --port "$port" reset >/dev/null 2>&1 || true' EXIT
log "broker $boot; producing the data set"
"$bin" replay --data "$data" --sink kafka --brokers "$boot" 2>&1 | tail -1 >&2
topics=""
records=0
for t in acme.jobs acme.util acme.power; do
  n="$(kcat -b "$boot" -L -t "$t" 2>/dev/null | sed -n 's/.* with \([0-9]*\) partitions.*/\1/p')"
  [[ -n "$n" ]] || continue  # a data set without power files has no acme.power
  topics+="${topics:+ }$t"
  for ((p = 0; p < n; p++)); do
    records=$((records + $(kcat -b "$boot" -Q -t "$t:$p:-1" | awk '{print $NF}')))
  done
done
log "data: $records records in $topics"

cpu_file="$bench_dir/cpu"
cpu_of() {  # cpu_of CMD...: runs CMD under /usr/bin/time, adds its user+sys seconds to $cpu_file
  /usr/bin/time -f '%U %S %M' -o "$cpu_file.one" "$@"
  awk '{s += $1 + $2} END {printf "%.3f\n", s}' "$cpu_file" "$cpu_file.one" >"$cpu_file.sum"
  mv "$cpu_file.sum" "$cpu_file"
}
per_m() { awk -v s="$1" -v n="$records" 'BEGIN {printf "%.2f", s / (n / 1e6)}'; }

kcat_rates=() acme_rates=() round_ratios=() kcat_cpus=() acme_cpus=()
for ((r = 0; r <= runs; r++)); do
  echo 0 >"$cpu_file"
  t0="$(now_ns)"
  got=0
  for t in $topics; do  # kcat -C reads one topic per run: the topics one after the other
    n="$(cpu_of kcat -b "$boot" -C -t "$t" -o beginning -e -q -f '%s\n' | wc -l)"
    got=$((got + n))
  done
  t1="$(now_ns)"
  kcat_cpu="$(per_m "$(cat "$cpu_file")")"
  ((got == records)) || { log "kcat read $got records, expected $records"; exit 1; }
  kcat_rate="$(awk -v n="$records" -v ns="$((t1 - t0))" 'BEGIN {printf "%.0f", n / (ns / 1e9)}')"

  echo 0 >"$cpu_file"
  t0="$(now_ns)"
  cpu_of "$bin" process --source kafka --sink stdout --brokers "$boot" --group "bench-$r-$$" --until-end \
    >/dev/null 2>"$bench_dir/process.err"
  t1="$(now_ns)"
  acme_cpu="$(per_m "$(cat "$cpu_file")")"
  acme_rss_mb="$(awk '{printf "%d", $3 / 1024}' "$cpu_file.one")"
  grep -q "records processed" "$bench_dir/process.err" || { cat "$bench_dir/process.err" >&2; exit 1; }
  acme_rate="$(awk -v n="$records" -v ns="$((t1 - t0))" 'BEGIN {printf "%.0f", n / (ns / 1e9)}')"
  if ((r == 0)); then
    log "warm-up: kcat $kcat_rate records/s, acmetrace process $acme_rate records/s (not counted)"
    continue
  fi
  kcat_rates+=("$kcat_rate") acme_rates+=("$acme_rate") kcat_cpus+=("$kcat_cpu") acme_cpus+=("$acme_cpu")
  round_ratios+=("$(awk -v a="$acme_rate" -v k="$kcat_rate" 'BEGIN {printf "%.2f", a / k}')")
  log "round $r: kcat $kcat_rate records/s ($kcat_cpu CPU s/M records), acmetrace process $acme_rate records/s" \
    "($acme_cpu CPU s/M records, peak RSS $acme_rss_mb MB), ratio ${round_ratios[-1]}"
done
kcat_median="$(printf '%s\n' "${kcat_rates[@]}" | median)"
acme_median="$(printf '%s\n' "${acme_rates[@]}" | median)"
ratio="$(awk -v a="$acme_median" -v k="$kcat_median" 'BEGIN {printf "%.2f", a / k}')"
echo "kafka: $records records ($(basename "$data")); kcat -C ${kcat_median} records/s" \
  "($(printf '%s\n' "${kcat_cpus[@]}" | median) CPU s per M records); acmetrace process ${acme_median} records/s" \
  "($(printf '%s\n' "${acme_cpus[@]}" | median) CPU s per M records; whole run: connect, group join, parse," \
  "metrics, detectors); ratio ${ratio} (goal >= 0.5); median of the rounds' ratios" \
  "$(printf '%s\n' "${round_ratios[@]}" | median)"
tail -1 "$bench_dir/process.err" >&2

if ((week)); then
  wdata="$bench_dir/synth-week-s$week_scale"
  if [[ ! -f "$wdata/.done" ]]; then
    log "generating a week at scale $week_scale (seren)"
    rm -rf "$wdata"
    "$bin" synth --out "$wdata" --days 7 --scale "$week_scale" --clusters seren --seed 1 >&2
    touch "$wdata/.done"
  fi
  "$bin" replay --data "$wdata" --sink stdout 2>/dev/null |
    /usr/bin/time -v "$bin" process --source stdin >/dev/null 2>"$bench_dir/week.err"
  rss_kb="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$bench_dir/week.err")"
  summary="$(grep "records processed" "$bench_dir/week.err")"
  echo "week (seren, scale $week_scale): peak RSS $((rss_kb / 1024)) MiB; ${summary#*process: }"
fi
