#!/usr/bin/env bash
# Side-by-side benchmarks: the working tree against one or more base commits, on this machine, in
# one run. On a shared two-core machine an absolute figure moves by a third from one run to the
# next; a ratio of medians taken in alternating rounds does not.
#
# Usage: BASE="COMMIT [COMMIT ...]" hack/bench-compare.sh     (or make bench-compare BASE=...)
#
# Each base is checked out in a worktree of its own (_output/bench-compare/trees/SHA), built with
# its own Makefile and tools script, and its plane started with its own hack/local-up.sh, so each
# side runs as it was. The load is the working tree's benchmark binary for every side: the same
# load tool. Every round runs every side once, on a plane started afresh (its data removed), in
# alternating order (bases first on odd rounds, the head first on even ones), so that a drift of
# the machine over the run weighs on both sides alike.
#
# The benchmarks' JSON goes to _output/bench/compare/STAMP/SIDE-rN/, their logs beside it, and
# hack/benchcompare prints, for every figure, each side's median over the rounds with its range
# and the head's median over each base's (below 1: the head's figure is smaller), and writes
# compare.txt and compare.json there. A side whose benchmark failed in a round has no figures for
# that round; the run goes on.
#
# Environment (defaults in brackets):
#   BASE      the commits to compare with (required)
#   ROUNDS    [3] rounds; each runs every side once
#   BENCH     [^(BenchmarkWarmClaims|BenchmarkAPIPath|BenchmarkChurn)$] the benchmarks (go test -bench)
#   SANDBOX_BENCH_CHURN_DURATION [60s] BenchmarkChurn's length (its own default is 10m); the
#             other SANDBOX_BENCH_* settings pass through to the benchmarks
#   SANDBOX_BENCH_CONTENT_TYPE [application/json] what the load tool speaks to our kinds: JSON,
#             which every commit serves (protobuf came later); application/vnd.kubernetes.protobuf
#             when every base serves it, as make bench does
#   BENCH_TIMEOUT [60m] the go test timeout of one side's run
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
cd "${ROOT}"

BASE="${BASE:-}"
ROUNDS="${ROUNDS:-3}"
BENCH="${BENCH:-^(BenchmarkWarmClaims|BenchmarkAPIPath|BenchmarkChurn)\$}"
BENCH_TIMEOUT="${BENCH_TIMEOUT:-60m}"
export SANDBOX_BENCH_CHURN_DURATION="${SANDBOX_BENCH_CHURN_DURATION:-60s}"
export SANDBOX_BENCH_CONTENT_TYPE="${SANDBOX_BENCH_CONTENT_TYPE:-application/json}"
GO="${GO:-go}"

[[ -n "${BASE}" ]] || die "BASE is required: the commits to compare the working tree with (BASE=\"COMMIT [COMMIT ...]\")"
[[ "${ROUNDS}" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not ${ROUNDS}"

TREES="${ROOT}/_output/bench-compare/trees"
OUT="${ROOT}/_output/bench/compare/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "${TREES}" "${OUT}"

# The sides: "head" is the working tree; each base is base-SHA in its worktree.
labels=(head)
trees=("${ROOT}")
for commit in ${BASE}; do
  sha="$(git rev-parse --short=12 "${commit}^{commit}")" || die "no commit ${commit}"
  tree="${TREES}/${sha}"
  if [[ ! -d "${tree}" ]]; then
    log "checking out ${commit} (${sha}) in ${tree#"${ROOT}/"}"
    git worktree add --detach "${tree}" "${sha}" >/dev/null
  fi
  labels+=("base-${sha}")
  trees+=("${tree}")
done

for i in "${!trees[@]}"; do
  log "building ${labels[i]}"
  make -C "${trees[i]}" build tools >"${OUT}/build-${labels[i]}.log" 2>&1 \
    || die "building ${labels[i]} failed; see ${OUT#"${ROOT}/"}/build-${labels[i]}.log"
done
log "building the load tool (the working tree's test/bench)"
"${GO}" test -c -o "${OUT}/bench.test" ./test/bench

# stop_all stops whichever side's plane is running: they share the ports.
stop_all() {
  local tree
  for tree in "${trees[@]}"; do
    if [[ -d "${tree}/_output/local/pids" ]]; then
      "${tree}/hack/local-up.sh" stop >/dev/null 2>&1 || true
    fi
  done
}
trap stop_all EXIT

# run_side I ROUND: one side's benchmarks on a plane of its own started afresh.
run_side() {
  local i="$1" round="$2" label="${labels[$1]}" tree="${trees[$1]}"
  local dir="${OUT}/${label}-r${round}"
  mkdir -p "${dir}"
  stop_all
  rm -rf "${tree}/_output/local"
  log "round ${round}: ${label}: starting its plane"
  if ! PROFILING=true "${tree}/hack/local-up.sh" start >"${dir}/local-up.log" 2>&1; then
    log "round ${round}: ${label}: the plane did not start; see ${dir#"${ROOT}/"}/local-up.log"
    return 0
  fi
  log "round ${round}: ${label}: ${BENCH} (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  # The benchmarks find the repository root from their working directory.
  if ! (cd "${ROOT}/test/bench" && SANDBOX_BENCH_PLANE="${tree}/_output/local" SANDBOX_BENCH_OUT="${dir}" \
    "${OUT}/bench.test" -test.run '^$' -test.bench "${BENCH}" -test.benchtime 1x -test.timeout "${BENCH_TIMEOUT}" -test.v \
    >"${dir}/bench.log" 2>&1); then
    log "round ${round}: ${label}: a benchmark failed; see ${dir#"${ROOT}/"}/bench.log"
  fi
  cp "${tree}/_output/local/logs/sandbox-apiserver.log" "${dir}/" 2>/dev/null || true
  stop_all
}

start=${SECONDS}
for ((round = 1; round <= ROUNDS; round++)); do
  order=("${!labels[@]}")
  if ((round % 2 == 1)); then
    # Bases first, the head last.
    order=("${order[@]:1}" 0)
  fi
  for i in "${order[@]}"; do
    run_side "${i}" "${round}"
  done
done
log "${ROUNDS} rounds of ${#labels[@]} sides in $((SECONDS - start)) s"

"${GO}" run ./hack/benchcompare -dir "${OUT}" -head head
log "figures: ${OUT#"${ROOT}/"}/compare.txt and compare.json; the runs beside them"
