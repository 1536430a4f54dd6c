#!/usr/bin/env bash
# CTest fixture for the kafka-labelled tests: start a broker on a free port and write its address to
# FILE, or stop it and wipe its data. Usage: kafka_broker.sh start|stop FILE
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cmd="${1:?start|stop}"
file="${2:?bootstrap file}"
case "$cmd" in
  start)
    if [[ -s "$file" ]]; then  # a previous run left one behind
      "$root/scripts/kafka-local" --port "$(sed 's/.*://' "$file")" reset >&2 || true
    fi
    boot="$("$root/scripts/kafka-local" --port 0 start)"
    echo "$boot" >"$file"
    echo "kafka_broker.sh: broker on $boot" >&2
    ;;
  stop)
    [[ -s "$file" ]] || exit 0
    "$root/scripts/kafka-local" --port "$(sed 's/.*://' "$file")" reset
    rm -f "$file"
    ;;
  *) echo "usage: $0 start|stop FILE" >&2; exit 2 ;;
esac
