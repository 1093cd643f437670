#!/usr/bin/env bash
# Fails when the generated code is stale: regenerates into a scratch copy of the tree and compares.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/common.sh
source "${ROOT}/hack/lib/common.sh"
SCRATCH=$(mktemp -d)
trap 'rm -rf "${SCRATCH}"' EXIT

# The copy keeps the generator binaries in _output/codegen so a second run does not rebuild them.
tar -C "${ROOT}" --exclude=./.git --exclude=./_output -cf - . | tar -C "${SCRATCH}" -xf -
mkdir -p "${ROOT}/_output/codegen" "${SCRATCH}/_output"
ln -s "${ROOT}/_output/codegen" "${SCRATCH}/_output/codegen"

(cd "${SCRATCH}" && hack/update-codegen.sh >/dev/null) \
  || die "hack/update-codegen.sh failed in a scratch copy of the tree (its errors are above); run it in the checkout to see it whole"

if ! diff -ruN "${ROOT}/pkg" "${SCRATCH}/pkg" >"${SCRATCH}/codegen.diff" \
  || ! diff -u "${ROOT}/hack/api-rules-violations.list" "${SCRATCH}/hack/api-rules-violations.list" >>"${SCRATCH}/codegen.diff"; then
  head -n 100 "${SCRATCH}/codegen.diff"
  echo "Generated code is out of date: run hack/update-codegen.sh" >&2
  exit 1
fi
echo "Generated code is up to date."
