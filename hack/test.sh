#!/usr/bin/env bash
# make test: every test layer in order, each timed. Stops at the first layer that fails and, pass or
# fail, ends with a table of each layer's wall-clock time, so a CI log shows where its budget went.
#
# Usage: hack/test.sh [LAYER ...]   (default: all of them, in the order below)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
cd "${ROOT}"

# layer|make targets. The builds come first, so no test layer's time includes a cold build of the
# upstream tools (the first run on a machine builds them; later runs find them in the cache).
LAYERS=(
  "build|build tools"
  "verify|verify"
  "unit|test-unit"
  "fuzz|test-fuzz"
  "integration|test-integration"
  "e2e|test-e2e"
  "e2e-chart|test-e2e-chart"
)

wanted=("$@")
rows=()
status=0
# shellcheck disable=SC2317 # run by the EXIT trap
summary() {
  printf '\nmake test: time per layer\n' >&2
  printf '  %-12s %7s  %s\n' layer seconds result >&2
  printf '  %s\n' "${rows[@]}" >&2
}
trap summary EXIT

for entry in "${LAYERS[@]}"; do
  name="${entry%%|*}"
  targets="${entry#*|}"
  if ((${#wanted[@]} > 0)) && [[ " ${wanted[*]} " != *" ${name} "* ]]; then
    continue
  fi
  start=${SECONDS}
  log "layer ${name}: make ${targets}"
  # shellcheck disable=SC2086 # targets are words
  if make --no-print-directory ${targets}; then
    rows+=("$(printf '%-12s %7d  %s' "${name}" $((SECONDS - start)) ok)")
  else
    status=$?
    rows+=("$(printf '%-12s %7d  %s' "${name}" $((SECONDS - start)) "FAILED (exit ${status})")")
    break
  fi
done
exit "${status}"
