# What the end-to-end scripts share (sourced, not run): a temporary directory that goes on exit (E2E_KEEP=1
# keeps it), the background processes they start and stop on exit, the last lines of the logs named on a
# failure, a free port on 127.0.0.1, and polling with a deadline.
#   e2e_begin NAME LOG...   # sets tmp and pids; NAME prefixes the messages; LOG paths (or globs, quoted)
#                           # relative to $tmp

# Starts the scratch directory and the exit trap: every pid in pids is stopped, the logs are shown on a failure.
e2e_begin() {
  e2e_name=$1; shift
  e2e_logs=("$@")
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/acmetrace-$e2e_name.XXXXXX")
  pids=()
  e2e_main_pid=$BASHPID
  trap e2e_cleanup EXIT
  trap 'exit 130' INT TERM
}

e2e_cleanup() {
  local rc=$?
  # A background job's subshell inherits the trap: only the script itself cleans up (else a stopped job could
  # remove the logs before the script shows them).
  [[ $BASHPID == "$e2e_main_pid" ]] || return 0
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  # A script's own cleanup after its processes stopped (e.g. a broker to wipe), if it defines one.
  if declare -F e2e_on_exit > /dev/null; then e2e_on_exit; fi
  if ((rc != 0)); then
    local pattern path
    for pattern in "${e2e_logs[@]}"; do
      for path in "$tmp"/$pattern; do
        [[ -s $path ]] && { echo "---- last lines of ${path#"$tmp"/}"; tail -n 20 "$path"; }
      done
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
