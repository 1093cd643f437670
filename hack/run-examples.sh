#!/usr/bin/env bash
# Applies every manifest in artifacts/examples/ to the local control plane
# (hack/local-up.sh start) and lists what the server holds: the category
# "agents" covers Sandbox, SandboxClaim, SandboxTemplate and SandboxWarmPool.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"

KUBECTL="${ROOT}/_output/tools/bin/kubectl"
export KUBECONFIG="${ROOT}/_output/local/kubeconfig"

[[ -x "${KUBECTL}" ]] || die "kubectl not found in _output/tools/bin (run: make tools)"
[[ -f "${KUBECONFIG}" ]] || die "no local control plane kubeconfig (run: hack/local-up.sh start)"

# A rejected manifest fails the script, but only after listing what was applied.
rc=0
log "kubectl apply -f artifacts/examples/"
"${KUBECTL}" --request-timeout=30s apply -f "${ROOT}/artifacts/examples/" || rc=$?

log "kubectl get agents -A"
"${KUBECTL}" --request-timeout=30s get agents -A || rc=$?

echo
echo "export KUBECONFIG=${KUBECONFIG}"
((rc == 0)) || log "ERROR: some examples did not apply (see above)"
exit "${rc}"
