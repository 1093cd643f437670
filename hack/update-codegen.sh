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

# Protobuf for the versioned types: generated.proto and generated.pb.go beside types.go, and the
# protobuf tags in types.go. go-to-protobuf works on a GOPATH-shaped tree (it hands protoc import
# paths such as k8s.io/api/core/v1/generated.proto), so a scratch tree of links stands for one:
# our module and the upstream modules whose .proto files ours import. Every upstream package is
# listed with a leading "-": read for its types, never regenerated.
# shellcheck source=hack/lib/common.sh
source "${ROOT}/hack/lib/common.sh"
# shellcheck source=hack/lib/debian.sh
source "${ROOT}/hack/lib/debian.sh"
# shellcheck source=hack/lib/protoc.sh
source "${ROOT}/hack/lib/protoc.sh"
ensure_protoc "$(tools_cache)"
go install golang.org/x/tools/cmd/goimports \
  k8s.io/code-generator/cmd/go-to-protobuf \
  k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo
PROTO_TREE=$(mktemp -d)
trap 'rm -rf "${PROTO_TREE}"' EXIT
link_module() { # link_module MODULE: MODULE's directory at its import path in the scratch tree
  local dir
  go mod download "$1"
  dir=$(go list -m -f '{{.Dir}}' "$1")
  mkdir -p "${PROTO_TREE}/$(dirname "$1")"
  ln -s "${dir}" "${PROTO_TREE}/$1"
}
mkdir -p "${PROTO_TREE}/$(dirname "${MODULE}")"
ln -s "${ROOT}" "${PROTO_TREE}/${MODULE}"
link_module k8s.io/api
link_module k8s.io/apimachinery
link_module github.com/gogo/protobuf
PROTO_PACKAGES=(
  -k8s.io/api/core/v1
  -k8s.io/api/networking/v1
  -k8s.io/api/autoscaling/v1
  "${MODULE}/pkg/apis/agents/v1beta1"
  "${MODULE}/pkg/apis/agents/v1alpha1"
  "${MODULE}/pkg/apis/extensions/v1beta1"
  "${MODULE}/pkg/apis/extensions/v1alpha1"
)
PATH="${GOBIN}:${PATH}" go-to-protobuf \
  --go-header-file "${BOILERPLATE}" \
  --output-dir "${PROTO_TREE}" \
  --proto-import "${PROTO_TREE}" \
  --proto-import "${PROTO_TREE}/github.com/gogo/protobuf/protobuf" \
  --apimachinery-packages "-k8s.io/apimachinery/pkg/util/intstr,-k8s.io/apimachinery/pkg/api/resource,-k8s.io/apimachinery/pkg/runtime/schema,-k8s.io/apimachinery/pkg/runtime,-k8s.io/apimachinery/pkg/apis/meta/v1" \
  --packages "$(IFS=,; echo "${PROTO_PACKAGES[*]}")"

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
  --prefers-protobuf \
  "${ROOT}/pkg/apis"
