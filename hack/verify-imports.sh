#!/usr/bin/env bash
# Fails when a package imports across the layers docs/architecture.md draws. Layers only point
# down:
#   pkg/apis, pkg/generated        the types, and code generated from them
#   pkg/util, pkg/fastpath,        helpers that several layers share; they import only the types
#   pkg/version, pkg/metrics,      and each other (pkg/adoption and pkg/warm are a claim's warm
#   pkg/adoption, pkg/warm         adoption, which the create path and the claim controller share)
#   pkg/registry | pkg/sdk | pkg/controllers
#                                  side by side: the registry and the SDK never import a
#                                  controller package, the controllers no registry or SDK package
#   pkg/mcpserver, cmd/kubectl-sandbox, cmd/sandbox-mcp
#                                  clients, on the SDK only
#   pkg/apiserver, pkg/cmd         assemble the server from all of them
# Tests count as their package's imports: a test that reaches across a layer ties the layers too.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
cd "${ROOT}"

MODULE="$(go list -m)"

# forbidden IMPORTER IMPORTED: the reason IMPORTER may not import IMPORTED, or nothing when it may.
# Both are paths inside the module.
forbidden() {
  local from="$1" to="$2"
  case "${from}" in
    pkg/apis/* | pkg/generated/* | pkg/util/* | pkg/fastpath | pkg/version | pkg/metrics | pkg/adoption | pkg/warm)
      case "${to}" in
        pkg/apis/* | pkg/generated/* | pkg/util/* | pkg/fastpath | pkg/version | pkg/metrics | pkg/adoption | pkg/warm) ;;
        *) echo "the types and the shared helpers import only each other" ;;
      esac ;;
    pkg/registry/* | pkg/sdk/*)
      case "${to}" in
        pkg/controllers | pkg/controllers/*) echo "the registry and the SDK never import a controller package" ;;
        pkg/apiserver* | pkg/cmd/* | pkg/mcpserver*) echo "nothing below the server imports what assembles it" ;;
        pkg/sdk/*) [[ "${from}" == pkg/sdk/* ]] || echo "the registry does not import the SDK" ;;
        pkg/registry/*) [[ "${from}" == pkg/registry/* ]] || echo "the SDK is a client: it reaches the registry through the API" ;;
      esac ;;
    pkg/controllers | pkg/controllers/*)
      case "${to}" in
        pkg/registry/*) echo "the controllers reach our kinds through the API, never a registry package" ;;
        pkg/sdk/* | pkg/apiserver* | pkg/cmd/* | pkg/mcpserver*) echo "the controllers import only the types, the shared helpers and each other" ;;
      esac ;;
    pkg/e2b | pkg/e2b/*)
      case "${to}" in
        pkg/controllers | pkg/controllers/* | pkg/apiserver* | pkg/cmd/* | pkg/mcpserver*) echo "the E2B endpoint reaches our kinds through the API; the server assembles it" ;;
        pkg/e2b) [[ "${from}" == pkg/e2b ]] || echo "the data plane is handed its Resolver: it does not import the control plane" ;;
      esac ;;
    pkg/mcpserver* | cmd/kubectl-sandbox* | cmd/sandbox-mcp*)
      case "${to}" in
        pkg/registry/* | pkg/controllers | pkg/controllers/* | pkg/apiserver* | pkg/cmd/*) echo "the clients use the API through the SDK" ;;
      esac ;;
  esac
}

violations=0
while read -r pkg imports; do
  from="${pkg#"${MODULE}"/}"
  for imp in ${imports}; do
    [[ "${imp}" == "${MODULE}"/* ]] || continue
    to="${imp#"${MODULE}"/}"
    reason="$(forbidden "${from}" "${to}")"
    if [[ -n "${reason}" ]]; then
      echo "${from} imports ${to}: ${reason}" >&2
      violations=$((violations + 1))
    fi
  done
done < <(go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./pkg/... ./cmd/...)

if ((violations > 0)); then
  die "${violations} imports cross a layer (see docs/architecture.md); move the shared code below both layers"
fi
log "imports: every layer points down"
