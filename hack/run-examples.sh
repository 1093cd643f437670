#!/usr/bin/env bash
# Applies every manifest in artifacts/examples/ to the local control plane
# (hack/local-up.sh start), waits (bounded) until every example that is meant to
# work is Ready, and lists what the server holds: the category "agents" covers
# Sandbox, SandboxClaim, SandboxTemplate and SandboxWarmPool.
#
# An example file that is not meant to become Ready says why in a line
#   # Not Ready on purpose: <one line>
# which is printed instead of waiting for its objects (test/e2e reads the same
# line). Templates have no Ready condition; warm pools are waited on until all
# their replicas are Ready.
#
# Environment: EXAMPLES_TIMEOUT [180] seconds to wait for the examples.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"

KUBECTL="${ROOT}/_output/tools/bin/kubectl"
export KUBECONFIG="${ROOT}/_output/local/kubeconfig"
EXAMPLES="${ROOT}/artifacts/examples"
EXAMPLES_TIMEOUT="${EXAMPLES_TIMEOUT:-180}"
NOT_READY_MARK='# Not Ready on purpose: '

[[ -x "${KUBECTL}" ]] || die "kubectl not found in _output/tools/bin (run: make tools)"
[[ -f "${KUBECONFIG}" ]] || die "no local control plane kubeconfig (run: hack/local-up.sh start)"

k() { "${KUBECTL}" --request-timeout=30s "$@"; }

# A rejected manifest fails the script, but only after listing what was applied.
rc=0
log "kubectl apply -f artifacts/examples/"
k apply -f "${EXAMPLES}/" || rc=$?

# What to wait for, by kind; what not to, with the reason.
waits=() pools=() notes=()
for f in "${EXAMPLES}"/*.yaml; do
  reason="$(grep -m1 "^${NOT_READY_MARK}" "${f}" | cut -c$((${#NOT_READY_MARK} + 1))- || true)"
  while read -r ref; do
    [[ -z "${ref}" ]] && continue
    if [[ -n "${reason}" ]]; then
      notes+=("${ref#*/} ($(basename "${f}")): ${reason}")
      continue
    fi
    case "${ref}" in
      sandbox.*|sandboxclaim.*) waits+=("${ref}") ;;
      sandboxwarmpool.*) pools+=("${ref}") ;;
    esac
  done < <(k create --dry-run=client -o name -f "${f}" 2>/dev/null || true)
done

deadline=$((SECONDS + EXAMPLES_TIMEOUT))
remaining() { local r=$((deadline - SECONDS)); echo $((r > 1 ? r : 1)); }
log "waiting up to ${EXAMPLES_TIMEOUT}s for ${#waits[@]} sandboxes and claims and ${#pools[@]} warm pools to be Ready"
for ref in "${waits[@]}"; do
  k wait --for=condition=Ready --timeout="$(remaining)s" "${ref}" >/dev/null 2>&1 ||
    { log "ERROR: ${ref} not Ready"; rc=1; }
done
for ref in "${pools[@]}"; do
  want="$(k get "${ref}" -o jsonpath='{.spec.replicas}')"
  k wait --for=jsonpath='{.status.readyReplicas}'="${want}" --timeout="$(remaining)s" "${ref}" >/dev/null 2>&1 ||
    { log "ERROR: ${ref} has not ${want} Ready replicas"; rc=1; }
done

log "kubectl get agents -A"
k get agents -A || rc=$?
echo
k get persistentvolumeclaims -A || rc=$?

if ((${#notes[@]})); then
  echo
  echo "Not Ready on purpose:"
  printf '  %s\n' "${notes[@]}"
fi

echo
echo "export KUBECONFIG=${KUBECONFIG}"
((rc == 0)) || log "ERROR: some examples did not apply or did not become Ready (see above)"
exit "${rc}"
