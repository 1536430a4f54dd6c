#!/usr/bin/env bash
# Side by side: `acmetrace replay --speed max --sink kafka` against `kcat -P -K` producing the same records
# (the JSON lines of `--sink stdout`, split into one key<TAB>value file per topic) into the same local broker,
# with the same topic settings. Prints records/s and MB/s (key+value bytes) of each and the ratio, and the
# CPU seconds per million records of each client (user+sys, /usr/bin/time) and of the broker during its run
# (utime+stime of the broker's JVM from /proc): on a 2-core machine where the broker shares the cores, the
# wall-time ratio follows the clients' CPU.
#
#   bench/kafka_vs_kcat.sh [--scale F] [--days N] [--runs N] [--config FILE] [--kcat-args "ARGS"] [--warm] [--sweep]
#                          [--bin PATH] [--before PATH] [--kcat-acme] [--kcat-together]
#
#   --scale F, --days N  the synthetic data set (`acmetrace synth --seed 1`), default a day at scale 0.05
#                        (~190k records, ~150 MB of JSON); cached in $ACMETRACE_BENCH_DIR/kafka_vs_kcat (.cache/bench)
#   --runs N             rounds (default 3); each round runs acmetrace then kcat; medians are reported
#   --config FILE        acmetrace YAML (kafka.* tuning) for the acmetrace runs and the topic settings
#   --kcat-args "ARGS"   extra kcat arguments (default none: kcat with librdkafka's defaults)
#   --warm               one broker for every run, warmed by an untimed round of each side, instead of a fresh one
#                        per run (a fresh broker's first produces to new partitions cost each side ~0.7 s, and its
#                        JIT competes for the cores); the records accumulate and each run's count is checked
#   --sweep              instead: acmetrace alone under each tuning of a grid (compression x linger x batch;
#                        narrow it with SWEEP_COMPRESSION="lz4 zstd", SWEEP_LINGER_MS="5 20", SWEEP_BATCH="10000")
#   --bin PATH           the acmetrace binary (default build/apps/acmetrace): e.g. a copy of an earlier build
#   --before PATH        also an earlier acmetrace build in every round, in alternated order with --bin's (odd
#                        rounds the earlier build first): both builds' figures come from the same rounds
#   --kcat-acme          also kcat with acmetrace's producer settings in every round (lz4, idempotence, one request
#                        in flight, linger 20 ms, murmur2_random: $kcat_acme_args below)
#   --kcat-together      also kcat with acmetrace's settings, its three topics (one kcat each) produced at the same
#                        time, as the replay writes them interleaved in trace time (the other kcat runs write the
#                        topics one after another, which fills each partition's batches faster)
#
# By default every run gets an empty broker (scripts/kafka-local reset + start on a free port) and the topics
# created beforehand with the same settings (an acmetrace replay of an empty time range creates them), so neither
# side pays for topic creation or finds the other's data. Each run's end offsets are checked against the records
# sent so far.
# Needs build/apps/acmetrace (scripts/build), kcat, python3, java (scripts/kafka-local).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/apps/acmetrace"
kafka_local="$root/scripts/kafka-local"
bench_dir="${ACMETRACE_BENCH_DIR:-$root/.cache/bench}/kafka_vs_kcat"
scale=0.05 days=1 runs=3 config="" kcat_args="" sweep=0 warm=0 before="" kcat_acme=0 kcat_together=0
kcat_acme_args="-X compression.codec=lz4 -X enable.idempotence=true -X max.in.flight.requests.per.connection=1 -X linger.ms=20 -X partitioner=murmur2_random"
while (($#)); do
  case "$1" in
    --scale) scale="$2"; shift 2 ;;
    --days) days="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --config) config="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --kcat-args) kcat_args="$2"; shift 2 ;;
    --sweep) sweep=1; shift ;;
    --warm) warm=1; shift ;;
    --bin) bin="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --before) before="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --kcat-acme) kcat_acme=1; shift ;;
    --kcat-together) kcat_together=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kafka_vs_kcat: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "kafka_vs_kcat: $bin missing: run scripts/build" >&2; exit 1; }
command -v kcat >/dev/null || { echo "kafka_vs_kcat: kcat missing (apt-get install kcat)" >&2; exit 1; }
mkdir -p "$bench_dir"
# A copy, so a rebuild during the benchmark does not pull the binary from under it.
cp "$bin" "$bench_dir/acmetrace.bin"
bin="$bench_dir/acmetrace.bin"
if [[ -n "$before" ]]; then
  [[ -x "$before" ]] || { echo "kafka_vs_kcat: $before missing" >&2; exit 1; }
  cp "$before" "$bench_dir/acmetrace-before.bin"
  before="$bench_dir/acmetrace-before.bin"
fi

log() { echo "kafka_vs_kcat: $*" >&2; }
now_ns() { date +%s%N; }

# --- data: a synthetic release, its JSON lines, and one key<TAB>value file per topic ---
data="$bench_dir/synth-d$days-s$scale"
if [[ ! -f "$data/.done" ]]; then
  log "generating $data"
  rm -rf "$data" "$data.tmp"
  "$bin" synth --out "$data.tmp" --days "$days" --scale "$scale" --seed 1 >&2
  "$bin" replay --data "$data.tmp" --speed max --sink stdout 2>/dev/null >"$data.tmp/feed.jsonl"
  python3 - "$data.tmp" <<'EOF'
import json, sys
d = sys.argv[1]
files, counts, sizes = {}, {}, {}
with open(d + "/feed.jsonl", "rb") as feed:
    for line in feed:
        # {"topic":"T","key":"K","value":{...}}\n  (keys need no escaping in acmetrace's data)
        t_end = line.index(b'","key":"')
        k_end = line.index(b'","value":', t_end)
        topic, key, value = line[10:t_end].decode(), line[t_end + 9:k_end], line[k_end + 10:-2]
        if topic not in files:
            files[topic] = open(f"{d}/{topic}.kv", "wb")
            counts[topic], sizes[topic] = 0, 0
        files[topic].write(key + b"\t" + value + b"\n")
        counts[topic] += 1
        sizes[topic] += len(key) + len(value)
with open(d + "/counts.json", "w") as out:
    json.dump({"records": counts, "bytes": sizes}, out)
EOF
  touch "$data.tmp/.done"
  mv "$data.tmp" "$data"
fi
read -r records bytes topics < <(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
print(sum(c["records"].values()), sum(c["bytes"].values()), ",".join(sorted(c["records"])))' "$data/counts.json")
log "data: $records records, $((bytes / 1000000)) MB of keys+values, topics $topics"

# --- a broker of our own, emptied before every run ---
boot="$("$kafka_local" --port 0 start)"
port="${boot##*:}"
trap '"$kafka_local" --port "$port" reset >/dev/null 2>&1 || true' EXIT
config_args=()
[[ -n "$config" ]] && config_args=(--config "$config")

# Records the broker should hold, in a file: the runs are timed in $(...) subshells.
sent_file="$bench_dir/sent"
cpu_file="$bench_dir/cpu"  # the last run's "client_cpu_s broker_cpu_s"
ticks="$(getconf CLK_TCK)"
broker_cpu() {  # the broker JVM's utime+stime so far, in seconds
  local pid
  pid="$(cat "${ACMETRACE_KAFKA_HOME:-$root/.cache/kafka}/broker-$port.pid" 2>/dev/null)" || { echo 0; return; }
  awk -v t="$ticks" '{sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / t}' "/proc/$pid/stat" 2>/dev/null || echo 0
}
echo 0 >"$sent_file"
fresh_broker() {  # fresh_broker CONFIG...: empty broker, topics created with the given acmetrace config
  if ((warm && $(cat "$sent_file") > 0)); then return 0; fi
  echo 0 >"$sent_file"
  "$kafka_local" --port "$port" reset >/dev/null 2>&1
  "$kafka_local" --port "$port" start >/dev/null 2>&1
  "$bin" "$@" replay --data "$data" --sink kafka --brokers "$boot" \
    --from 2000-01-01T00:00:00Z --to 2000-01-01T00:00:01Z >/dev/null 2>&1
}

end_offsets() {  # per topic "topic=sum of end offsets"
  local t p n total
  for t in ${topics//,/ }; do
    n="$(kcat -b "$boot" -L -t "$t" | sed -n 's/.* with \([0-9]*\) partitions.*/\1/p')"
    total=0
    for ((p = 0; p < n; p++)); do
      total=$((total + $(kcat -b "$boot" -Q -t "$t:$p:-1" | awk '{print $NF}')))
    done
    echo "$t=$total"
  done
}

held() { end_offsets | awk -F= '{s += $2} END {print s + 0}'; }  # messages the broker holds, markers included

check_offsets() {  # check_offsets HELD_BEFORE MARKERS: the broker holds what it held, the records and the markers
  local sums total
  sums="$(end_offsets)"
  total="$(awk -F= '{s += $2} END {print s}' <<<"$sums")"
  local sent=$(($1 + records + $2))
  echo "$sent" >"$sent_file"
  ((total == sent)) && return 0
  log "ERROR: broker holds $total records, expected $sent ($1 before, $records records, $2 stream markers):" \
    "$(echo $sums); expected records per run $(python3 -c '
import json, sys; print(json.load(open(sys.argv[1]))["records"])' "$data/counts.json")"
  sleep 3
  log "  3 s later: $(echo $(end_offsets)); consumed: $(for t in ${topics//,/ }; do
    echo -n "$t=$(kcat -b "$boot" -C -t "$t" -o beginning -e -q -f '.\n' | wc -l) "; done)"
  exit 1
}

run_acmetrace() {  # run_acmetrace CONFIG...: prints seconds (the binary: $acm_bin, default $bin)
  fresh_broker "$@"
  local t0 t1 b0 b1 before markers
  before="$(held)"
  b0="$(broker_cpu)"
  t0="$(now_ns)"
  /usr/bin/time -f '%U %S' -o "$cpu_file.client" "${acm_bin:-$bin}" "$@" replay --data "$data" --speed max --sink kafka \
    --brokers "$boot" 2>"$bench_dir/acmetrace.err" >/dev/null || { cat "$bench_dir/acmetrace.err" >&2; exit 1; }
  t1="$(now_ns)"
  b1="$(broker_cpu)"
  awk -v b0="$b0" -v b1="$b1" '{printf "%.2f %.2f\n", $1 + $2, b1 - b0}' "$cpu_file.client" >"$cpu_file"
  # The replay also writes stream markers (docs/kafka.md), which kcat's run does not.
  markers="$(sed -n 's/.*records produced (and \([0-9]*\) stream markers).*/\1/p' "$bench_dir/acmetrace.err")"
  echo "${markers:-0}" >"$bench_dir/markers"
  check_offsets "$before" "${markers:-0}"
  echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}

run_kcat() {  # run_kcat [KCAT ARGS]: prints seconds
  local args="${1-$kcat_args}" together="${2:-0}"
  fresh_broker "${config_args[@]}"
  local t0 t1 t b0 b1 before
  before="$(held)"
  b0="$(broker_cpu)"
  echo 0 >"$cpu_file.sum"
  t0="$(now_ns)"
  local pids=()
  for t in ${topics//,/ }; do
    # shellcheck disable=SC2086
    /usr/bin/time -f '%U %S' -o "$cpu_file.client-$t" kcat -P -b "$boot" -t "$t" -K $'\t' $args <"$data/$t.kv" &
    pids+=($!)
    ((together)) || wait "${pids[-1]}"
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  for t in ${topics//,/ }; do
    awk '{s += $1 + ($2 == "" ? 0 : $2)} END {print s}' "$cpu_file.sum" "$cpu_file.client-$t" >"$cpu_file.tmp"
    mv "$cpu_file.tmp" "$cpu_file.sum"
  done
  t1="$(now_ns)"
  b1="$(broker_cpu)"
  awk -v b0="$b0" -v b1="$b1" '{printf "%.2f %.2f\n", $1, b1 - b0}' "$cpu_file.sum" >"$cpu_file"
  check_offsets "$before" 0
  echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}

run_replay_alone() {  # the replay's own cost: reading, merging, JSON, no Kafka; prints seconds (CPU to $cpu_file)
  local t0 t1
  t0="$(now_ns)"
  /usr/bin/time -f '%U %S' -o "$cpu_file.client" "${acm_bin:-$bin}" replay --data "$data" --speed max --sink stdout \
    >/dev/null 2>&1
  t1="$(now_ns)"
  awk '{printf "%.2f 0\n", $1 + $2}' "$cpu_file.client" >"$cpu_file"
  echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
row() {  # row NAME SECONDS
  awk -v name="$1" -v s="$2" -v r="$records" -v b="$bytes" \
    'BEGIN {printf "%-34s %9d %8.2f %11.0f %8.1f\n", name, r, s, r / s, b / 1e6 / s}'
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), librdkafka $(pkg-config --modversion rdkafka), kcat $(kcat -V 2>&1 | sed -n "s/^Version \([^ ]*\).*/\1/p")"
echo "# data: synth --days $days --scale $scale --seed 1: $records records, $((bytes / 1000000)) MB keys+values; $( ((warm)) && echo "one warmed broker" || echo "a fresh broker per run")"

if ((sweep)); then
  printf '%-34s %9s %8s %11s %8s\n' "acmetrace tuning" records seconds records/s MB/s
  tmp_config="$bench_dir/sweep.yaml"
  for compression in ${SWEEP_COMPRESSION:-none lz4 zstd}; do
    for linger in ${SWEEP_LINGER_MS:-5 20 100}; do
      for batch in ${SWEEP_BATCH:-10000 100000}; do
        printf 'kafka:\n  compression: %s\n  linger_ms: %s\n  batch_num_messages: %s\n' \
          "$compression" "$linger" "$batch" >"$tmp_config"
        times=()
        for ((i = 0; i < runs; i++)); do times+=("$(run_acmetrace --config "$tmp_config")"); done
        row "$compression linger=$linger batch=$batch" "$(median "${times[@]}")"
      done
    done
  done
  exit 0
fi

acm=() kc=() alone=() acm_cpu=() kc_cpu=() acm_broker=() kc_broker=() alone_cpu=()
bef=() bef_cpu=() bef_broker=() bef_alone=() bef_alone_cpu=() ka=() ka_cpu=() ka_broker=() kt=() kt_cpu=() kt_broker=()
if ((warm)); then
  log "warm-up round (not counted)"
  run_acmetrace "${config_args[@]}" >/dev/null
  run_kcat >/dev/null
fi
measure_after() {
  alone+=("$(run_replay_alone)")
  read -r c b <"$cpu_file"
  alone_cpu+=("$c")
  acm+=("$(run_acmetrace "${config_args[@]}")")
  read -r c b <"$cpu_file"
  acm_cpu+=("$c") acm_broker+=("$b")
  log "  acmetrace ${acm[-1]} s (client CPU ${acm_cpu[-1]} s, broker ${acm_broker[-1]} s)," \
    "replay to /dev/null ${alone[-1]} s (CPU ${alone_cpu[-1]} s)"
}
measure_before() {
  bef_alone+=("$(acm_bin="$before" run_replay_alone)")
  read -r c b <"$cpu_file"
  bef_alone_cpu+=("$c")
  bef+=("$(acm_bin="$before" run_acmetrace "${config_args[@]}")")
  read -r c b <"$cpu_file"
  bef_cpu+=("$c") bef_broker+=("$b")
  log "  before: acmetrace ${bef[-1]} s (client CPU ${bef_cpu[-1]} s, broker ${bef_broker[-1]} s)," \
    "replay to /dev/null ${bef_alone[-1]} s (CPU ${bef_alone_cpu[-1]} s)"
}
for ((i = 1; i <= runs; i++)); do
  log "round $i/$runs"
  if [[ -n "$before" ]] && ((i % 2 == 1)); then measure_before; fi
  measure_after
  if [[ -n "$before" ]] && ((i % 2 == 0)); then measure_before; fi
  kc+=("$(run_kcat)")
  read -r c b <"$cpu_file"
  kc_cpu+=("$c") kc_broker+=("$b")
  log "  kcat ${kc[-1]} s (client CPU ${kc_cpu[-1]} s, broker ${kc_broker[-1]} s)"
  if ((kcat_acme)); then
    ka+=("$(run_kcat "$kcat_acme_args")")
    read -r c b <"$cpu_file"
    ka_cpu+=("$c") ka_broker+=("$b")
    log "  kcat with acmetrace's settings ${ka[-1]} s (client CPU ${ka_cpu[-1]} s, broker ${ka_broker[-1]} s)"
  fi
  if ((kcat_together)); then
    kt+=("$(run_kcat "$kcat_acme_args" 1)")
    read -r c b <"$cpu_file"
    kt_cpu+=("$c") kt_broker+=("$b")
    log "  kcat with acmetrace's settings, topics at once ${kt[-1]} s (client CPU ${kt_cpu[-1]} s, broker ${kt_broker[-1]} s)"
  fi
done
printf '%-34s %9s %8s %11s %8s\n' producer records seconds records/s MB/s
row "acmetrace replay --sink kafka" "$(median "${acm[@]}")"
[[ -n "$before" ]] && row "  before (--before)" "$(median "${bef[@]}")"
row "kcat -P -K (3 topics, in turn)" "$(median "${kc[@]}")"
((kcat_acme)) && row "  with acmetrace's settings" "$(median "${ka[@]}")"
((kcat_together)) && row "  the same, 3 topics at once" "$(median "${kt[@]}")"
row "(replay --sink stdout >/dev/null)" "$(median "${alone[@]}")"
ratio() { awk -v a="$1" -v k="$2" 'BEGIN {printf "%.2fx", k / a}'; }
echo "ratio acmetrace/kcat (records/s, medians): $(ratio "$(median "${acm[@]}")" "$(median "${kc[@]}")")" \
  "$([[ -n "$before" ]] && echo "; before: $(ratio "$(median "${bef[@]}")" "$(median "${kc[@]}")")")"
per_m() { awk -v s="$1" -v n="$records" 'BEGIN {printf "%.2f", s / (n / 1e6)}'; }
echo "acmetrace's runs also wrote $(cat "$bench_dir/markers") stream markers each (the last run; messages without key" \
  "or value, docs/kafka.md) that kcat's did not; records/s and CPU per million records count the records only"
echo "CPU seconds per million records (median): acmetrace client $(per_m "$(median "${acm_cpu[@]}")")" \
  "(broker meanwhile $(per_m "$(median "${acm_broker[@]}")"); replay --sink stdout alone" \
  "$(per_m "$(median "${alone_cpu[@]}")")); kcat client $(per_m "$(median "${kc_cpu[@]}")")" \
  "(broker meanwhile $(per_m "$(median "${kc_broker[@]}")"))"
if [[ -n "$before" ]]; then
  echo "  before: acmetrace client $(per_m "$(median "${bef_cpu[@]}")") (broker meanwhile" \
    "$(per_m "$(median "${bef_broker[@]}")"); replay --sink stdout alone $(per_m "$(median "${bef_alone_cpu[@]}")"))"
fi
if ((kcat_acme)); then
  echo "  kcat with acmetrace's settings: client $(per_m "$(median "${ka_cpu[@]}")") (broker meanwhile" \
    "$(per_m "$(median "${ka_broker[@]}")"))"
fi
if ((kcat_together)); then
  echo "  kcat with acmetrace's settings, 3 topics at once: client $(per_m "$(median "${kt_cpu[@]}")") (broker meanwhile" \
    "$(per_m "$(median "${kt_broker[@]}")"))"
fi
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# runs (s): acmetrace ${acm[*]}; kcat ${kc[*]}; replay alone ${alone[*]}"
echo "# client CPU (s): acmetrace ${acm_cpu[*]}; kcat ${kc_cpu[*]}; replay alone ${alone_cpu[*]}; broker CPU (s): during acmetrace ${acm_broker[*]}; during kcat ${kc_broker[*]}"
if [[ -n "$before" ]]; then
  echo "# before: runs (s) ${bef[*]}; client CPU (s) ${bef_cpu[*]}; broker CPU (s) ${bef_broker[*]}; replay alone CPU (s) ${bef_alone_cpu[*]}"
fi
if ((kcat_acme)); then
  echo "# kcat with acmetrace's settings: runs (s) ${ka[*]}; client CPU (s) ${ka_cpu[*]}; broker CPU (s) ${ka_broker[*]}"
fi
if ((kcat_together)); then
  echo "# kcat with acmetrace's settings, 3 topics at once: runs (s) ${kt[*]}; client CPU (s) ${kt_cpu[*]}; broker CPU (s) ${kt_broker[*]}"
fi
