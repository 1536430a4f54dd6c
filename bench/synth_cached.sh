# Sourced by the backfill benchmarks: synth_cached BIN WORK DAYS SCALE synthesizes DAYS day(s) of both
# clusters at SCALE (seed 3, injected faults) into WORK/dDAYS-sSCALE once, reused while its .complete
# marker stands, and sets `data` to that directory.
synth_cached() {
  local bin=$1 work=$2 days=$3 scale=$4
  data=$work/d$days-s$scale
  if [[ ! -f "$data/.complete" ]]; then
    echo "synthesizing $days day(s) of seren and kalos at scale $scale into $data ..."
    rm -rf "$data"
    "$bin" synth --out "$data" --days "$days" --scale "$scale" --seed 3 --inject-faults > "$work/synth.log" 2>&1
    touch "$data/.complete"
  fi
}
