# What the end-to-end scripts of tests/deploy share (sourced): a temporary directory, the processes they start
# (stopped on exit, with the last lines of their logs on failure), free ports and waiting.
#   e2e_start NAME   makes $tmp (kept with E2E_KEEP=1) and the exit trap; append started pids to pids
# shellcheck shell=bash

e2e_start() {
  e2e_name=$1
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/acmetrace-$e2e_name.XXXXXX")
  pids=()
  trap e2e_cleanup EXIT
  trap 'exit 130' INT TERM
}

e2e_cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  if ((rc != 0)); then
    for log in "$tmp"/*.err "$tmp"/prometheus.log; do
      [[ -s $log ]] && { echo "---- last lines of $(basename "$log")"; tail -n 20 "$log"; }
    done
  fi
  if [[ ${E2E_KEEP:-0} == 1 ]]; then echo "$e2e_name: kept $tmp"; else rm -rf "$tmp"; fi
  exit "$rc"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits up to $1 seconds for the command in "${@:2}" to succeed.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" 2> /dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
