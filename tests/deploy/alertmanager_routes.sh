#!/usr/bin/env bash
# The shipped Alertmanager routes as docs/monitoring.md states them (CTest label `alertmanager`): `amtool config
# routes test` on configs/alertmanager/alertmanager.yml resolves each label set to the receiver the docs name.
# Usage: alertmanager_routes.sh [AMTOOL]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
amtool=${1:-amtool}
config="$root/configs/alertmanager/alertmanager.yml"
failed=0
expect() {
  local receiver=$1; shift
  if ! "$amtool" config routes test --config.file="$config" --verify.receivers="$receiver" "$@" > /dev/null 2>&1; then
    echo "alertmanager_routes: FAIL: {$*} went to $("$amtool" config routes test --config.file="$config" "$@" 2> /dev/null), not $receiver"
    failed=1
  else
    echo "alertmanager_routes: {$*} -> $receiver"
  fi
}
expect seren-oncall alertname=DcgmGpuTemperatureCritical severity=critical cluster=seren team=gpu-fleet
expect kalos-oncall alertname=AcmetraceNodeFailure severity=critical cluster=kalos
expect fleet-oncall alertname=AcmetraceExporterDown severity=critical job=acmetrace
expect gpu-fleet-tickets alertname=AcmetraceXidError severity=warning cluster=seren team=gpu-fleet
expect tickets alertname=AcmetracePendingGpusHigh severity=warning cluster=kalos
exit "$failed"
