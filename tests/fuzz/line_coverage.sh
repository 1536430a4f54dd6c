#!/usr/bin/env bash
# Line coverage of our sources by each fuzz target's grown corpus (after scripts/fuzz):
#   tests/fuzz/line_coverage.sh [TARGET...]
# Builds the targets again into build-cov/ with clang's source-based coverage and no sanitizer,
# replays build-fuzz/fuzz-runs/TARGET/corpus once (-runs=0), and prints llvm-cov's per-file
# report (regions, functions, lines) for the files of core/, producers/, processors/, exporters/.
set -euo pipefail
cd "$(dirname "$0")/../.."
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build-cov -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DACMETRACE_BUILD_FUZZ=ON \
  -DACMETRACE_FUZZ_SANITIZERS= "-DCMAKE_CXX_FLAGS=-fprofile-instr-generate -fcoverage-mapping" \
  -DACMETRACE_BUILD_TESTS=OFF -DACMETRACE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build build-cov --target acmetrace_fuzz_all -j "$(nproc)" >/dev/null
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(find build-fuzz/fuzz-runs -mindepth 1 -maxdepth 1 -type d -name '*_fuzz' -printf '%f\n' | sort)
fi
profdata=$(command -v llvm-profdata-14 || command -v llvm-profdata)
cov=$(command -v llvm-cov-14 || command -v llvm-cov)
for t in "${targets[@]}"; do
  corpus=build-fuzz/fuzz-runs/$t/corpus
  [[ -d $corpus ]] || { echo "$t: no corpus in $corpus (run scripts/fuzz first)"; continue; }
  raw=build-cov/$t.profraw
  LLVM_PROFILE_FILE=$raw build-cov/tests/fuzz/"$t" -runs=0 "$corpus" >/dev/null 2>&1 || true
  "$profdata" merge -sparse -o build-cov/"$t".profdata "$raw"
  echo "== $t ($(find "$corpus" -type f | wc -l) inputs)"
  "$cov" report build-cov/tests/fuzz/"$t" -instr-profile=build-cov/"$t".profdata \
    -ignore-filename-regex='(/usr/|tests/fuzz/)' | sed 's|^.*/\(core\|producers\|processors\|exporters\)/|\1/|'
done
