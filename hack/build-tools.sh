#!/usr/bin/env bash
# Builds the upstream binaries the local control plane runs (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, etcd, kwok) from the pins in
# hack/tools/go.mod, and helm from the pin in hack/tools/helm/go.mod (a module
# of its own: helm's k8s.io dependencies are of another minor), each into a
# cache directory keyed by its module's pins and the Go toolchain, and links
# them into _output/tools/bin/; local-path-provisioner, the plane's volume
# provisioner, likewise from hack/tools/local-path/go.mod. Also copies kwok's Stage files into
# _output/tools/kwok-stages/. A second run only re-links.
#
# The local plane's real node (hack/local-up.sh runs it as root on Linux) needs
# kubelet (from the same k8s.io/kubernetes pin), containerd, its runc shim and
# ctr (hack/tools/containerd/go.mod), runc (hack/tools/runc/go.mod, with cgo
# and libseccomp) and Debian's CNI plugins, and for its network kube-proxy (the
# same k8s.io/kubernetes pin, in hack/tools/kube-proxy/go.mod), kube-router's
# firewall (hack/tools/kube-router/go.mod), CoreDNS (hack/tools/coredns/go.mod)
# and Debian's ipset and socat; those are built or installed too where the node
# can run (root on Linux), or when LOCAL_NODE=true.
#
# Usage: hack/build-tools.sh [all|plane|node]   (default all)
#
# Environment:
#   SANDBOX_TOOLS_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/sandbox-apiserver/tools)
#   GO                   go command (default: go)
#   LOCAL_NODE           [auto] true: build the node's tools; false: never; auto:
#                        when running as root on Linux
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"
source "${ROOT}/hack/lib/debian.sh"

GO="${GO:-go}"
TOOLS_MOD="${ROOT}/hack/tools"
HELM_MOD="${ROOT}/hack/tools/helm"
CONTAINERD_MOD="${ROOT}/hack/tools/containerd"
RUNC_MOD="${ROOT}/hack/tools/runc"
LOCAL_PATH_MOD="${ROOT}/hack/tools/local-path"
KUBE_PROXY_MOD="${ROOT}/hack/tools/kube-proxy"
KUBE_ROUTER_MOD="${ROOT}/hack/tools/kube-router"
OUT_BIN="${ROOT}/_output/tools/bin"
OUT_STAGES="${ROOT}/_output/tools/kwok-stages"

# name|package|version (the version is only for the -X version stamps)
mod_version() {
  awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "${TOOLS_MOD}/go.mod"
}
KUBE_VERSION="$(mod_version k8s.io/kubernetes)"
KWOK_VERSION="$(mod_version sigs.k8s.io/kwok)"
[[ -n "${KUBE_VERSION}" && -n "${KWOK_VERSION}" ]] || die "cannot read versions from hack/tools/go.mod"
HELM_VERSION="$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" { print $3; exit }' "${HELM_MOD}/go.mod")"
# The Kubernetes version helm assumes without a cluster (helm template, helm lint) is that of its
# client-go, v0.N -> 1.N, as helm's own build stamps it.
HELM_KUBE_MINOR="$(awk '$1 == "k8s.io/client-go" { split($2, v, "."); print v[2]; exit }' "${HELM_MOD}/go.mod")"
[[ -n "${HELM_VERSION}" && -n "${HELM_KUBE_MINOR}" ]] || die "cannot read the helm and client-go versions from hack/tools/helm/go.mod"

TOOLS=(
  "kube-apiserver|k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager|k8s.io/kubernetes/cmd/kube-controller-manager"
  "kube-scheduler|k8s.io/kubernetes/cmd/kube-scheduler"
  "kubectl|k8s.io/kubernetes/cmd/kubectl"
  "etcd|go.etcd.io/etcd/server/v3"
  "kwok|sigs.k8s.io/kwok/cmd/kwok"
)

# The real node's binaries, each from the module named first (a directory: a module of its own,
# cached under its name and key): kubelet from k8s.io/kubernetes
# (not imported in hack/tools/tools.go: that would add Windows-only modules to go.mod and with
# them a new cache key for every tool).
NODE_TOOLS=(
  "TOOLS_MOD|kubelet|k8s.io/kubernetes/cmd/kubelet"
  "CONTAINERD_MOD|containerd|github.com/containerd/containerd/v2/cmd/containerd"
  "CONTAINERD_MOD|containerd-shim-runc-v2|github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
  "CONTAINERD_MOD|ctr|github.com/containerd/containerd/v2/cmd/ctr"
  "RUNC_MOD|runc|github.com/opencontainers/runc"
  "hack/tools/kube-proxy|kube-proxy|k8s.io/kubernetes/cmd/kube-proxy"
  "hack/tools/kube-router|kube-router|github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
  "hack/tools/coredns|coredns|github.com/coredns/coredns"
)

KWOK_STAGES=(
  kustomize/stage/node/fast/node-initialize.yaml
  kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  kustomize/stage/pod/fast/pod-ready.yaml
  kustomize/stage/pod/fast/pod-complete.yaml
  kustomize/stage/pod/fast/pod-delete.yaml
)

# cache_key MODDIR: covers everything that changes the binaries of that module:
# its pins, the toolchain and the target platform.
cache_key() {
  {
    cat "$1/go.mod" "$1/go.sum"
    (cd "$1" && "${GO}" env GOVERSION GOOS GOARCH)
  } | digest_key
}

kube_ldflags() {
  local v="${KUBE_VERSION#v}" major minor
  major="${v%%.*}"
  minor="${v#*.}"; minor="${minor%%.*}"
  local pkg flags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
    flags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
    flags+=" -X ${pkg}.gitTreeState=clean"
  done
  echo "${flags}"
}

ldflags_for() {
  case "$1" in
    kube-router) echo "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$(module_pin "${KUBE_ROUTER_MOD}" github.com/cloudnativelabs/kube-router/v2)" ;;
    kube-*|kubectl|kubelet) kube_ldflags ;;
    containerd*|ctr) echo "-s -w -X github.com/containerd/containerd/v2/version.Version=$(module_pin "${CONTAINERD_MOD}" github.com/containerd/containerd/v2)" ;;
    local-path-provisioner) echo "-s -w -X main.VERSION=$(module_pin "${LOCAL_PATH_MOD}" github.com/rancher/local-path-provisioner)" ;;
    runc) echo "-s -w -X main.version=$(module_pin "${RUNC_MOD}" github.com/opencontainers/runc | sed 's/^v//') -extldflags -static-pie" ;;
    kwok) echo "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}" ;;
    helm)
      local flags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" pkg
      for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        flags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${HELM_KUBE_MINOR}"
      done
      echo "${flags}" ;;
    *) echo "-s -w" ;;
  esac
}

# module_pin MODDIR MODULE: the version MODDIR's go.mod requires of MODULE.
module_pin() {
  awk -v m="$2" '($1 == "require" && $2 == m) { print $3; exit } $1 == m && $2 ~ /^v/ { print $2; exit }' "$1/go.mod"
}

# build_env_for NAME, build_flags_for NAME: the environment and extra flags of
# NAME's go build. containerd without the snapshotters that need cgo (the node
# uses overlayfs); runc static with cgo, for libseccomp (seccomp profiles), as
# runc's own release builds it.
build_env_for() {
  case "$1" in
    runc) echo "CGO_ENABLED=1" ;;
    *) echo "CGO_ENABLED=0" ;;
  esac
}

build_flags_for() {
  case "$1" in
    containerd*|ctr) echo "-tags=no_btrfs,no_devmapper,no_zfs" ;;
    runc) echo "-tags=seccomp,netgo,osusergo,urfave_cli_no_docs -buildmode=pie" ;;
  esac
}

# build_tool MODDIR CACHE_DIR NAME PKG: builds NAME from PKG in the module MODDIR
# into CACHE_DIR unless it is there, and links it into _output/tools/bin.
build_tool() {
  local mod="$1" cache_dir="$2" name="$3" pkg="$4" start=${SECONDS}
  if [[ -x "${cache_dir}/${name}" ]]; then
    log "${name}: cached"
  else
    log "${name}: building ${pkg} ..."
    # Build to a temporary name and rename, so an interrupted build never
    # leaves a truncated binary that a later run would take as cached.
    # shellcheck disable=SC2046 # words: VAR=VALUE assignments for env, flags for go build
    (cd "${mod}" && env $(build_env_for "${name}") "${GO}" build -trimpath $(build_flags_for "${name}") \
      -ldflags="$(ldflags_for "${name}")" \
      -o "${cache_dir}/${name}.tmp.$$" "${pkg}") \
      || { rm -f "${cache_dir}/${name}.tmp.$$"; die "${name}: build failed"; }
    mv -f "${cache_dir}/${name}.tmp.$$" "${cache_dir}/${name}"
    log "${name}: built in $((SECONDS - start))s"
    built=$((built + 1))
  fi
  ln -sfn "${cache_dir}/${name}" "${OUT_BIN}/${name}"
}

# node_wanted: whether this machine builds the real node's tools (see LOCAL_NODE).
node_wanted() {
  case "${LOCAL_NODE:-auto}" in
    true) return 0 ;;
    false) return 1 ;;
    auto) [[ "$(uname -s)" == Linux && "$(id -u)" == 0 ]] ;;
    *) die "LOCAL_NODE must be auto, true or false, got ${LOCAL_NODE}" ;;
  esac
}

build_plane_tools() {
  local cache_dir="$1" helm_cache_dir="$2" entry
  for entry in "${TOOLS[@]}"; do
    build_tool "${TOOLS_MOD}" "${cache_dir}" "${entry%%|*}" "${entry#*|}"
  done
  build_tool "${HELM_MOD}" "${helm_cache_dir}" helm helm.sh/helm/v3/cmd/helm
  local local_path_cache_dir
  local_path_cache_dir="$(dirname "${cache_dir}")/local-path-$(cache_key "${LOCAL_PATH_MOD}")"
  mkdir -p "${local_path_cache_dir}"
  build_tool "${LOCAL_PATH_MOD}" "${local_path_cache_dir}" local-path-provisioner github.com/rancher/local-path-provisioner

  local kwok_dir rel
  # With every binary cached, the kwok module may still be missing from the module cache.
  (cd "${TOOLS_MOD}" && "${GO}" mod download sigs.k8s.io/kwok) || die "cannot download the kwok module"
  kwok_dir="$(cd "${TOOLS_MOD}" && "${GO}" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  [[ -n "${kwok_dir}" && -d "${kwok_dir}" ]] || die "kwok module source not found (go mod download in hack/tools)"
  mkdir -p "${OUT_STAGES}"
  for rel in "${KWOK_STAGES[@]}"; do
    [[ -f "${kwok_dir}/${rel}" ]] || die "kwok stage file missing: ${rel}"
    install -m 0644 "${kwok_dir}/${rel}" "${OUT_STAGES}/$(basename "${rel}")"
  done
}

# build_node_tools CACHE_ROOT CACHE_DIR: kubelet into CACHE_DIR (it shares the control plane's
# module and most of kube-apiserver's packages), containerd and runc into directories of their
# own modules' keys (runc's also covers the libseccomp it links), Debian's CNI plugins and
# libseccomp-dev from apt, then the node's images (hack/build-node-images.sh).
build_node_tools() {
  local cache_root="$1" cache_dir="$2" containerd_cache runc_cache entry mod moddir mod_cache
  ensure_debs libseccomp-dev containernetworking-plugins ipset socat
  # kube-proxy must be of the control plane's release: its module pins k8s.io/kubernetes again.
  [[ "$(module_pin "${KUBE_PROXY_MOD}" k8s.io/kubernetes)" == "${KUBE_VERSION}" ]] ||
    die "hack/tools/kube-proxy/go.mod pins k8s.io/kubernetes $(module_pin "${KUBE_PROXY_MOD}" k8s.io/kubernetes), hack/tools/go.mod ${KUBE_VERSION}: make them agree"
  containerd_cache="${cache_root}/containerd-$(cache_key "${CONTAINERD_MOD}")"
  runc_cache="${cache_root}/runc-$({ cache_key "${RUNC_MOD}"; dpkg-query -W -f='${Version}' libseccomp-dev; } | digest_key)"
  mkdir -p "${containerd_cache}" "${runc_cache}"
  for entry in "${NODE_TOOLS[@]}"; do
    IFS='|' read -r mod name pkg <<<"${entry}"
    case "${mod}" in
      TOOLS_MOD) build_tool "${TOOLS_MOD}" "${cache_dir}" "${name}" "${pkg}" ;;
      CONTAINERD_MOD) build_tool "${CONTAINERD_MOD}" "${containerd_cache}" "${name}" "${pkg}" ;;
      RUNC_MOD) build_tool "${RUNC_MOD}" "${runc_cache}" "${name}" "${pkg}" ;;
      *)
        # One cache directory per module: kube-proxy-KEY, kube-router-KEY, coredns-KEY.
        moddir="${ROOT}/${mod}"
        mod_cache="${cache_root}/$(basename "${moddir}")-$(cache_key "${moddir}")"
        mkdir -p "${mod_cache}"
        build_tool "${moddir}" "${mod_cache}" "${name}" "${pkg}" ;;
    esac
  done
  SANDBOX_TOOLS_CACHE="${cache_root}" "${ROOT}/hack/build-node-images.sh"
}

main() {
  local what="${1:-all}"
  case "${what}" in all|plane|node) ;; *) die "usage: hack/build-tools.sh [all|plane|node]" ;; esac
  command -v "${GO}" >/dev/null || die "go not found (set GO=...)"
  local cache_root
  cache_root="$(tools_cache)"
  local cache_dir helm_cache_dir
  cache_dir="${cache_root}/$(cache_key "${TOOLS_MOD}")"
  helm_cache_dir="${cache_root}/helm-$(cache_key "${HELM_MOD}")"
  mkdir -p "${cache_dir}" "${helm_cache_dir}" "${OUT_BIN}"
  log "tools cache: ${cache_dir} (helm: ${helm_cache_dir})"

  local total_start=${SECONDS} built=0 name pkg
  [[ "${what}" == node ]] || build_plane_tools "${cache_dir}" "${helm_cache_dir}"
  if [[ "${what}" != plane ]]; then
    if node_wanted; then
      build_node_tools "${cache_root}" "${cache_dir}"
    elif [[ "${what}" == node ]]; then
      die "the real node's tools are built as root on Linux (or with LOCAL_NODE=true)"
    else
      log "not root on Linux: the real node's tools are not built (hack/local-up.sh runs kwok's nodes alone)"
    fi
  fi

  log "tools ready in _output/tools/bin (${built} built, $((SECONDS - total_start))s)"
}

main "$@"
