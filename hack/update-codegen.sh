#!/usr/bin/env bash
# Regenerates everything under pkg/generated and the zz_generated files beside the API types, with
# k8s.io/code-generator and kube-openapi at the versions pinned in go.mod.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=$(go list -m)
# The generators are installed here, not into the user's GOPATH/bin.
export GOBIN="${ROOT}/_output/codegen/bin"
mkdir -p "${GOBIN}"
# go list prints no directory for a module that is not in the module cache yet (a new machine):
# download it first.
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
[[ -n "${CODEGEN_PKG}" ]] || { echo "k8s.io/code-generator not found in the module cache" >&2; exit 1; }
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

# One run per group: the extensions group embeds agents.x-k8s.io types and converts them through
# the small wrappers in its conversion.go; generating both at once would make the agents group
# pick those wrappers up too, and import the extensions group in a cycle.
kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${ROOT}/pkg/apis/agents"
kube::codegen::gen_helpers --boilerplate "${BOILERPLATE}" "${ROOT}/pkg/apis/extensions"

# OpenAPI for our types and every upstream type they embed (PodSpec, NetworkPolicy rules, Scale).
kube::codegen::gen_openapi \
  --boilerplate "${BOILERPLATE}" \
  --output-dir "${ROOT}/pkg/generated/openapi" \
  --output-pkg "${MODULE}/pkg/generated/openapi" \
  --output-model-name-file zz_generated.model_name.go \
  --report-filename "${ROOT}/hack/api-rules-violations.list" \
  ${UPDATE_API_KNOWN_VIOLATIONS:+--update-report} \
  --extra-pkgs k8s.io/api/core/v1 \
  --extra-pkgs k8s.io/api/networking/v1 \
  --extra-pkgs k8s.io/api/autoscaling/v1 \
  --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
  "${ROOT}/pkg/apis"

kube::codegen::gen_client \
  --boilerplate "${BOILERPLATE}" \
  --output-dir "${ROOT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --with-watch \
  --with-applyconfig \
  "${ROOT}/pkg/apis"
