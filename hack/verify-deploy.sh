#!/usr/bin/env bash
# Checks the chart (helm lint --strict, in each etcd and certificate mode) and that
# artifacts/deploy/*.yaml are what hack/update-deploy.sh renders from it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/chart.sh"

helm="$(helm_bin)"
lint() {
  "${helm}" lint --strict --namespace "${DEPLOY_NAMESPACE}" "${CHART_DIR}" "$@" >/dev/null ||
    { "${helm}" lint --strict --namespace "${DEPLOY_NAMESPACE}" "${CHART_DIR}" "$@"; die "helm lint --strict $*"; }
}
lint
lint -f "${DEPLOY_VALUES}"
lint --set certificates.mode=certManager --set etcd.bundled.replicas=1
lint --set etcd.mode=external --set 'etcd.external.endpoints={https://etcd.example:2379}' \
  --set etcd.external.secretName=etcd-client
log "helm lint --strict: ok"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
render_deploy "${tmp}"
if ! diff -ru "${DEPLOY_DIR}" "${tmp}" >"${tmp}.diff"; then
  cat "${tmp}.diff" >&2
  rm -f "${tmp}.diff"
  die "artifacts/deploy is not what the chart renders: run hack/update-deploy.sh"
fi
rm -f "${tmp}.diff"
log "artifacts/deploy is fresh"
