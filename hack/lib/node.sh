# shellcheck shell=bash
# The local plane's real node: containerd (with runc and Debian's CNI plugins) and kubelet, joined
# to the plane's kube-apiserver, running pods of images built locally (hack/build-node-images.sh)
# and imported into containerd. Sourced by hack/local-up.sh, after its own definitions (NODE_NAME,
# NODE_IP, NODE_POD_CIDR, NODE_BRIDGE, CNI_BIN_DIR and the kubelet's ports come from
# hack/localplane, which also writes containerd's, the CNI plugins' and kubelet's configuration).
#
# The node changes the host, and stop (make down) undoes every change: hack/localplane records
# each change before it is made (the sysctls kubelet and the bridge plugin set, the fixed host
# paths, the cgroups, mounts and iptables chains the node makes, its bridge) with what was there
# before, and stop undoes those records newest first and nothing else. It works after a crash too
# (kill -9 of everything) and twice. One real node per machine: its host paths and sysctls are
# the machine's.

LOCAL_NODE="${LOCAL_NODE:-auto}"
NODE_DIR="${OUT}/node"
NODE_IMAGES="${ROOT}/_output/tools/images"
CONTAINERD_SOCK="${NODE_DIR}/run/containerd.sock"
# The taint kwok's nodes carry while the real node runs: sandboxes land on the real node unless
# their template tolerates it (the benchmarks' and scale tests' pools of hundreds).
KWOK_TAINT_KEY="sandbox-apiserver.dev/kwok"
KWOK_TAINT="${KWOK_TAINT_KEY}=true:NoSchedule"

# The sandbox image also answers to the names the examples and the tests use, so their pods run
# it without a registry (docs/local-plane.md). A MutatingAdmissionPolicy gives containers of
# these names imagePullPolicy IfNotPresent: a tag of latest, or none, would mean Always, a pull
# that no registry here answers.
NODE_SANDBOX_IMAGE="localhost/sandbox:local"
NODE_IMAGE_ALIASES=(
  ghcr.io/example/agent:latest ghcr.io/example/agent:v1
  ghcr.io/example/helper:latest ghcr.io/example/db:latest ghcr.io/example/cache:latest
  registry.example.com/agent:v1
  busybox busybox:latest alpine:latest python:3.13
  us-central1-docker.pkg.dev/k8s-staging-images/agent-sandbox/python-runtime-sandbox:latest-main
)
NODE_IMAGES_LOCAL=(localhost/sandbox:local localhost/noshell:local localhost/pause:local)


node_binaries_missing() {
  local t missing=()
  for t in kubelet containerd containerd-shim-runc-v2 ctr runc; do
    [[ -x "${TOOLS_BIN}/${t}" ]] || missing+=("${t}")
  done
  for t in sandbox noshell pause; do
    [[ -s "${NODE_IMAGES}/${t}.tar" ]] || missing+=("image-${t}")
  done
  for t in bridge host-local portmap; do
    [[ -x "${CNI_BIN_DIR}/${t}" ]] || missing+=("CNI-${t}")
  done
  echo "${missing[*]}"
}

# foreign_kubelet: a kubelet runs on this machine that is not this plane's.
foreign_kubelet() {
  local pid ours
  ours="$(pid_of kubelet || true)"
  for pid in $(pgrep -x kubelet || true); do
    [[ "${pid}" == "${ours}" ]] || return 0
  done
  return 1
}

# node_enabled: whether start runs the real node; says why not when it does not.
node_enabled() {
  local why="" missing
  case "${LOCAL_NODE}" in
    false) log "node: LOCAL_NODE=false: kwok's nodes alone"; return 1 ;;
    true|auto) ;;
    *) die "LOCAL_NODE must be auto, true or false, got ${LOCAL_NODE}" ;;
  esac
  if [[ "$(uname -s)" != Linux ]]; then
    why="a real node needs Linux"
  elif [[ "$(id -u)" != 0 ]]; then
    why="a real node needs root (containers, mounts, a bridge, cgroups)"
  elif missing="$(node_binaries_missing)"; [[ -n "${missing}" ]]; then
    why="missing ${missing} (run make tools as root; CNI: apt-get install containernetworking-plugins)"
  elif ! is_running kubelet && foreign_kubelet; then
    why="another kubelet runs on this machine (one real node per machine)"
  fi
  [[ -z "${why}" ]] && return 0
  [[ "${LOCAL_NODE}" == true ]] && die "node: LOCAL_NODE=true but ${why}"
  log "node: not started: ${why}; kwok's nodes alone"
  return 1
}

# ---------------------------------------------------------------------------
# Configuration


# write_pull_policy FILE: the MutatingAdmissionPolicy that gives containers of the locally served
# images imagePullPolicy IfNotPresent.
write_pull_policy() {
  local names=() alias
  for alias in "${NODE_IMAGE_ALIASES[@]}" "${NODE_IMAGES_LOCAL[@]}"; do names+=("'${alias}'"); done
  local list
  list="$(IFS=,; echo "${names[*]}")"
  cat >"$1" <<EOF
# Written by hack/local-up.sh: the images the local plane's node serves are never pulled.
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: local-node-images
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{
          containers: object.spec.containers.filter(c, c.image in [${list}]).map(c,
            Object.spec.containers{name: c.name, imagePullPolicy: "IfNotPresent"}),
          initContainers: (has(object.spec.initContainers) ? object.spec.initContainers : []).filter(c, c.image in [${list}]).map(c,
            Object.spec.initContainers{name: c.name, imagePullPolicy: "IfNotPresent"})
        }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: local-node-images
spec:
  policyName: local-node-images
EOF
}

# ---------------------------------------------------------------------------
# Components

# prepare_containerd records the node's host changes (and makes the bridge) before any is made,
# and writes containerd's configuration. A containerd without its root directory has no
# containers: stop removed them, so the pods bound to this node are gone too; after_containerd
# deletes those, and their owners make new ones (a pod that never restarts would otherwise stay
# Failed).
prepare_containerd() {
  local_plane node-record
  local_plane node-config
  NODE_FRESH=false
  [[ -d "${NODE_DIR}/containerd/root" ]] || NODE_FRESH=true
}

after_containerd() {
  import_node_images
  if [[ "${NODE_FRESH}" == true ]]; then
    kubectl_admin delete pods --all-namespaces --field-selector "spec.nodeName=${NODE_NAME}" \
      --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
  fi
}

ctr_k8s() {
  "${TOOLS_BIN}/ctr" --address "${CONTAINERD_SOCK}" --namespace k8s.io "$@"
}

# normalize_image REF: the name containerd keeps REF under (docker.io/library/..., :latest).
normalize_image() {
  local ref="$1"
  [[ "${ref##*/}" == *:* ]] || ref="${ref}:latest"
  if [[ "${ref}" != */* ]]; then
    ref="docker.io/library/${ref}"
  elif [[ "${ref%%/*}" != *.* && "${ref%%/*}" != *:* && "${ref%%/*}" != localhost ]]; then
    ref="docker.io/${ref}"
  fi
  echo "${ref}"
}

import_node_images() {
  local name alias out start=${SECONDS}
  # ctr warns on every call that cgroup v1 is deprecated: its output is shown only on failure.
  for name in pause noshell sandbox; do
    out="$(ctr_k8s images import "${NODE_IMAGES}/${name}.tar" 2>&1)" ||
      { echo "${out}" >&2; fail containerd "importing ${NODE_IMAGES#"${ROOT}/"}/${name}.tar failed"; }
  done
  for alias in "${NODE_IMAGE_ALIASES[@]}"; do
    out="$(ctr_k8s images tag --force "${NODE_SANDBOX_IMAGE}" "$(normalize_image "${alias}")" 2>&1)" ||
      { echo "${out}" >&2; fail containerd "tagging ${alias} failed"; }
  done
  log "node: images imported in $((SECONDS - start))s: ${NODE_IMAGES_LOCAL[*]}"
  log "node: the sandbox image (shell, coreutils, tar, python3) also serves: ${NODE_IMAGE_ALIASES[*]}"
}

prepare_kubelet() {
  local_plane credentials node
  local_plane node-config
  ensure_node_object
  local policy="${MANIFESTS}/local-node-images.yaml"
  write_pull_policy "${policy}"
  kubectl_admin apply -f "${policy}" >/dev/null
  KUBELET_STARTED=${SECONDS}
}

after_kubelet() {
  if ! kubectl_admin wait --for=condition=Ready --timeout="${START_TIMEOUT}s" "node/${NODE_NAME}" >/dev/null; then
    kubectl_admin get node "${NODE_NAME}" -o wide >&2 || true
    fail kubelet "node ${NODE_NAME} not Ready after ${START_TIMEOUT}s"
  fi
  lift_not_ready_taint "${NODE_NAME}"
  log "node: ${NODE_NAME} Ready $((SECONDS - KUBELET_STARTED))s after kubelet's start"
}

# ensure_node_object creates the Node with its pod CIDR before kubelet registers it: there is no
# node IPAM controller here to give it one.
ensure_node_object() {
  kubectl_admin get node "${NODE_NAME}" >/dev/null 2>&1 && return 0
  kubectl_admin create -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: ${NODE_NAME}
  labels: {type: real, kubernetes.io/hostname: ${NODE_NAME}, kubernetes.io/os: linux}
spec:
  podCIDR: ${NODE_POD_CIDR}
  podCIDRs: [${NODE_POD_CIDR}]
EOF
}

# taint_kwok_nodes NAMES...: taints kwok's nodes while the real node runs, lifts it otherwise.
taint_kwok_nodes() {
  local node
  for node in "$@"; do
    if is_running kubelet; then
      kubectl_admin taint node "${node}" "${KWOK_TAINT}" --overwrite >/dev/null
    elif kubectl_admin get node "${node}" -o jsonpath='{.spec.taints[*].key}' | grep -qwF "${KWOK_TAINT_KEY}"; then
      kubectl_admin taint node "${node}" "${KWOK_TAINT_KEY}:NoSchedule-" >/dev/null
    fi
  done
}

# ---------------------------------------------------------------------------
# Stop and clean up

# node_cleanup undoes what the node did to the host, from the journal of its host changes
# (hack/localplane, docs/local-plane.md), newest first.
node_cleanup() {
  local_plane node-restore
}

# node_touched: the node ran, or left something behind.
node_touched() {
  [[ -e "${PIDS}/kubelet.pid" || -e "${PIDS}/containerd.pid" || -d "${NODE_DIR}" || -e "${OUT}/host-changes.json" ]]
}

node_status() {
  local ready
  ready="$(kubectl_admin get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)"
  # shellcheck disable=SC2153 # NODE_IP comes from hack/localplane (hack/local-up.sh)
  printf '%-24s %s\n' "node ${NODE_NAME}" "Ready=${ready:-unknown} (pods ${NODE_POD_CIDR} on ${NODE_BRIDGE}, kubelet ${NODE_IP}:${KUBELET_PORT})"
}
