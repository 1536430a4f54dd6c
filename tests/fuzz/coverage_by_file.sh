#!/usr/bin/env bash
# Edge coverage of our own source files reached by a fuzz target's corpus:
#   coverage_by_file.sh BINARY CORPUS_DIR
# Replays the corpus once (-runs=0) with libFuzzer's -print_coverage and sums, per file of our libraries
# (core/, producers/, processors/, exporters/, scoring/, history/, pipeline/, remote_write/, rules/, http/), the edges (basic-block transitions) covered out of all
# instrumented in the file's functions linked into the target. Prints "file covered/total percent".
set -euo pipefail
binary=$1 corpus=$2
"$binary" -runs=0 -print_coverage=1 "$corpus" 2>&1 |
  awk '/^(UN)?COVERED_FUNC:/ {
         split($5, e, "/"); file = $NF; sub(/:[0-9]+$/, "", file)
         # From our first directory on, wherever the build directory is (build-fuzz/ or BUILD_DIR).
         if (!match(file, /\/(core|producers|processors|exporters|scoring|history|pipeline|remote_write|rules|http)\//)) next
         file = substr(file, RSTART + 1)
         covered[file] += e[1]; total[file] += e[2]
       }
       END { for (f in total) if (total[f] > 0) printf "%s %d/%d %.0f%%\n", f, covered[f], total[f], 100 * covered[f] / total[f] }' |
  sort
