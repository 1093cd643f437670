#!/usr/bin/env bash
# Gives the local plane's E2B endpoint (hack/local-up.sh starts it) a demo tenant:
# the user e2b-demo, bound to the ClusterRole sandbox-apiserver:e2b-user in the
# examples' namespace (default), with an API key. Writes the variables E2B's SDKs
# read to _output/local/e2b.env (source it) and prints them. A key written there
# before is kept while its Secret exists. See docs/e2b.md.
#
# Environment: E2B_PORT [3049], E2B_DEMO_NAMESPACE [default], E2B_DEMO_USER [e2b-demo]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"

KUBECTL="${ROOT}/_output/tools/bin/kubectl"
SERVER="${ROOT}/_output/bin/sandbox-apiserver"
export KUBECONFIG="${ROOT}/_output/local/kubeconfig"
ENV_FILE="${ROOT}/_output/local/e2b.env"
E2B_PORT="${E2B_PORT:-3049}"
NS="${E2B_DEMO_NAMESPACE:-default}"
DEMO_USER="${E2B_DEMO_USER:-e2b-demo}"
KEYS_NS=sandbox-system

[[ -x "${KUBECTL}" && -x "${SERVER}" ]] || die "run make build tools first"
[[ -f "${KUBECONFIG}" ]] || die "no local control plane kubeconfig (run: hack/local-up.sh start)"

"${KUBECTL}" create rolebinding "${DEMO_USER}" -n "${NS}" --clusterrole=sandbox-apiserver:e2b-user \
  --user="${DEMO_USER}" --dry-run=client -o yaml | "${KUBECTL}" apply -f - >/dev/null

key=""
if [[ -f "${ENV_FILE}" ]]; then
  key="$(sed -n 's/^export E2B_API_KEY=//p' "${ENV_FILE}")"
  id="$(printf '%s' "${key}" | sha256sum | cut -c1-20)"
  "${KUBECTL}" get secret -n "${KEYS_NS}" "e2b-key-${id}" >/dev/null 2>&1 || key=""
fi
if [[ -z "${key}" ]]; then
  key="$("${SERVER}" e2b-key --kubeconfig "${KUBECONFIG}" --e2b-api-keys-namespace "${KEYS_NS}" \
    --user "${DEMO_USER}" --namespace "${NS}")"
fi

cat >"${ENV_FILE}" <<ENV
export E2B_API_URL=http://127.0.0.1:${E2B_PORT}
export E2B_SANDBOX_URL=http://127.0.0.1:${E2B_PORT}
export E2B_API_KEY=${key}
ENV
echo
echo "E2B endpoint: user ${DEMO_USER} in namespace ${NS} (source ${ENV_FILE#"${ROOT}/"}):"
cat "${ENV_FILE}"
