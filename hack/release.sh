#!/usr/bin/env bash
# Writes a release into _output/release/VERSION/, every file with the version in its name and
# stamped inside:
#   sandbox-apiserver-VERSION.yaml       the plain install manifests (artifacts/deploy, image
#                                        tag VERSION; the serving and etcd Secrets and the
#                                        caBundle are yours to make: hack/deploy-certs.sh)
#   sandbox-apiserver-CHARTVER.tgz       the Helm chart, version and appVersion stamped
#   NAME-VERSION.oci.tar                 each image (hack/build-image.sh) as an oci-archive,
#                                        for `podman load` or `skopeo copy oci-archive:...`
#   SHA256SUMS
# CHARTVER is VERSION without its leading v (a chart version is plain SemVer).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/version.sh"
source "${ROOT}/hack/lib/chart.sh"

sandbox_version_vars "${ROOT}"
OUT="${ROOT}/_output/release/${VERSION}"
IMAGES="${OUT}/.images"
rm -rf "${OUT}"
mkdir -p "${OUT}"

OUT_DIR="${IMAGES}" "${ROOT}/hack/build-image.sh"
for layout in "${IMAGES}"/*/; do
  name="$(basename "${layout}")"
  # An oci-archive is the layout in a tar; sorted, with fixed owners and times, like the layout.
  tar -C "${layout}" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH}" \
    -cf "${OUT}/${name}-${VERSION}.oci.tar" .
done
rm -rf "${IMAGES}"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
render_deploy "${tmp}" --set "image.tag=${VERSION}"
for name in "${DEPLOY_TEMPLATES[@]}"; do
  echo "---"
  cat "${tmp}/${name}.yaml"
done >"${OUT}/sandbox-apiserver-${VERSION}.yaml"

"$(helm_bin)" package "${CHART_DIR}" --version "${VERSION#v}" --app-version "${VERSION}" \
  --destination "${OUT}" >/dev/null

(cd "${OUT}" && sha256sum -- * >SHA256SUMS)
log "release ${VERSION} in ${OUT#"${ROOT}/"}:"
(cd "${OUT}" && ls -l) >&2
