#!/usr/bin/env bash
# Renders artifacts/deploy/*.yaml, the plain install manifests, from the chart
# artifacts/charts/sandbox-apiserver with hack/deploy-values.yaml, so the two never drift.
# hack/verify-deploy.sh checks they are fresh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/chart.sh"

rm -f "${DEPLOY_DIR}"/*.yaml
render_deploy "${DEPLOY_DIR}"
log "rendered artifacts/deploy: ${DEPLOY_TEMPLATES[*]}"
