#!/usr/bin/env bash
# Builds the OCI images of the binaries that run in a cluster, with no container engine: for each
# name in IMAGE_BINARIES, a static binary (CGO_ENABLED=0, -trimpath, version stamped) per
# platform in IMAGE_PLATFORMS, assembled by hack/image (go-containerregistry) into an OCI image
# layout OUT_DIR/NAME/ whose index.json names one image index, tagged VERSION:
#
#   crane push _output/images/sandbox-apiserver REGISTRY/sandbox-apiserver:VERSION
#   skopeo copy oci:_output/images/sandbox-apiserver:VERSION docker://REGISTRY/sandbox-apiserver:VERSION
#   hack/release.sh also writes each as an oci-archive, for `podman load`.
#
# Each image: /usr/local/bin/NAME as the entrypoint, nothing else but /tmp (no shell, no libc,
# no CA certificates: the server only dials the cluster's kube-apiserver and its etcd, both
# verified against CAs it is given), run as 65532:65532, labelled with
# org.opencontainers.image.{version,revision,source,created}. Every timestamp is the commit's
# time (SOURCE_DATE_EPOCH), so building one commit twice gives the same digests. The digest of
# each index is written to OUT_DIR/NAME.digest.
#
# The name etcd in IMAGE_BINARIES makes the same kind of image of the etcd pinned in
# hack/tools/go.mod (the one the local plane runs), tagged with that pin (v3.6.8): the chart's
# bundled etcd runs it where no registry is reachable (make run-chart, docs/operating.md).
#
# Environment:
#   OUT_DIR          where the layouts go [_output/images]
#   IMAGE_BINARIES   the binaries (./cmd/NAME, or etcd) to make images of
#                    [sandbox-apiserver sandbox-mcp]
#   IMAGE_PLATFORMS  [linux/amd64 linux/arm64]
#   VERSION, SOURCE_DATE_EPOCH, ...  see hack/lib/version.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/version.sh"

GO="${GO:-go}"
# The in-cluster binaries; another one joins by its ./cmd/ name.
IMAGE_BINARIES="${IMAGE_BINARIES:-sandbox-apiserver sandbox-mcp}"
IMAGE_PLATFORMS="${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}"
OUT_DIR="${OUT_DIR:-${ROOT}/_output/images}"

# etcd_pin: the version of etcd hack/tools/go.mod pins.
etcd_pin() {
  awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ { print $2; exit }' "${ROOT}/hack/tools/go.mod"
}

# build_binary NAME PLATFORM OUT: the static binary of ./cmd/NAME, stamped with VERSION; for
# etcd, the pinned etcd from hack/tools (as hack/build-tools.sh builds it for the plane).
build_binary() {
  local name="$1" platform="$2" out="$3" dir="${ROOT}" pkg="./cmd/$1" ldflags
  ldflags="$(sandbox_ldflags)"
  if [[ "${name}" == etcd ]]; then
    dir="${ROOT}/hack/tools" pkg=go.etcd.io/etcd/server/v3 ldflags="-s -w"
  fi
  (cd "${dir}" && CGO_ENABLED=0 GOOS="${platform%/*}" GOARCH="${platform#*/}" "${GO}" build \
    -trimpath -buildvcs=false -ldflags="${ldflags}" -o "${out}" "${pkg}")
}

main() {
  sandbox_version_vars "${ROOT}"
  mkdir -p "${OUT_DIR}"
  OUT_DIR="$(cd "${OUT_DIR}" && pwd)"
  local assembler="${OUT_DIR}/.bin/image" name platform bin_args bin digest tag
  (cd "${ROOT}/hack/image" && CGO_ENABLED=0 "${GO}" build -trimpath -o "${assembler}" .) ||
    die "building hack/image failed"
  log "images ${VERSION} (commit ${GIT_COMMIT:0:12}, ${BUILD_DATE}) for ${IMAGE_PLATFORMS}"
  for name in ${IMAGE_BINARIES}; do
    bin_args=()
    tag="${VERSION}"
    [[ "${name}" != etcd ]] || tag="$(etcd_pin)"
    for platform in ${IMAGE_PLATFORMS}; do
      bin="${OUT_DIR}/.bin/${platform/\//_}/${name}"
      log "${name}: go build for ${platform}"
      build_binary "${name}" "${platform}" "${bin}" || die "${name}: build for ${platform} failed"
      bin_args+=(--binary "${platform}=${bin}")
    done
    rm -rf "${OUT_DIR:?}/${name}"
    digest="$("${assembler}" --name "${name}" --out "${OUT_DIR}/${name}" --created "${BUILD_DATE}" \
      --version "${tag}" --revision "${GIT_COMMIT}" --source "${SOURCE_URL}" "${bin_args[@]}")" ||
      die "${name}: assembling the image failed"
    echo "${digest}" >"${OUT_DIR}/${name}.digest"
    log "${name}: ${OUT_DIR#"${ROOT}/"}/${name} ${tag} ${digest}"
  done
  rm -rf "${OUT_DIR}/.bin"
}

main "$@"
