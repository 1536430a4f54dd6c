#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS from its seed corpus: run_fuzz_target.sh BINARY SECONDS SEEDS WORK.
# New inputs go to WORK/corpus (made empty first; the seeds in the source tree are only read), a
# crash, leak or timeout leaves its input in WORK/ as crash-*, leak-* or timeout-*, and the
# final statistics (executions, corpus size, coverage) end the output. Exit status: libFuzzer's
# (0 when nothing was found).
set -euo pipefail
binary=$1 seconds=$2 seeds=$3 work=$4
rm -rf "$work"
mkdir -p "$work/corpus"
# halt_on_error: an undefined-behaviour report fails the run like a crash.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# -timeout: an input taking 10 s is a hang; -rss_limit_mb: one using 2 GB is a memory bug;
# -max_len: inputs up to 64 KiB (a wide CSV row is ~20 KB).
exec "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$seeds"
