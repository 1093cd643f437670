# shellcheck shell=bash
# The local plane's real node: containerd (with runc and Debian's CNI plugins) and kubelet, joined
# to the plane's kube-apiserver, running pods of images built locally (hack/build-node-images.sh)
# and imported into containerd. Sourced by hack/local-up.sh, after its own definitions.
#
# The node changes the host, and stop (make down) undoes every change: before the first start it
# records the sysctls kubelet and the bridge plugin set, and which of the fixed host paths and
# cgroups the node creates existed already; stop kills the containers, unmounts what is mounted
# under the node's directories, deletes the bridge, the new cgroups and paths, restores the
# sysctls and forgets the record. It works after a crash too (kill -9 of everything) and twice.
# One real node per machine: its host paths and sysctls are the machine's.

LOCAL_NODE="${LOCAL_NODE:-auto}"
NODE_NAME="${NODE_NAME:-local-node}"
KUBELET_PORT="${KUBELET_PORT:-10250}"
KUBELET_HEALTHZ_PORT="${KUBELET_HEALTHZ_PORT:-10248}"
NODE_POD_CIDR="${NODE_POD_CIDR:-10.88.0.0/24}"
NODE_BRIDGE="${NODE_BRIDGE:-sandbox0}"
NODE_DIR="${OUT}/node"
NODE_IMAGES="${ROOT}/_output/tools/images"
CNI_BIN_DIR="${CNI_BIN_DIR:-/usr/lib/cni}"
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

# Sysctls kubelet sets at every start (its kernel defaults) and the bridge plugin's forwarding.
NODE_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)
# Paths the node's processes create whatever directories they are given: kubelet's device
# plugins and container log links, libcni's result cache, containerd's shim sockets.
NODE_HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd)
# kubelet's cgroup of pods, in every cgroup v1 hierarchy (or the v2 root).
NODE_CGROUP_NAME="kubepods"
# The iptables tables where kubelet makes its KUBE-* chains (a hint and a canary for other
# components, and a rule against martian packets to 127.0.0.0/8).
NODE_IPTABLES_TABLES=(filter nat mangle)

# node_ip: the bridge's address (the pod CIDR's first), where kubelet serves and the Node says it
# is: kubelet refuses a loopback address, and the bridge's keeps it off the machine's network.
node_ip() {
  local net="${NODE_POD_CIDR%/*}"
  echo "${net%.*}.$((${net##*.} + 1))"
}

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
# The host record

node_record() { echo "${NODE_DIR}/host-before"; }

# record_host writes, once, the sysctls, host paths, cgroups and bridge as they are before the
# node changes them.
record_host() {
  local rec s p d
  rec="$(node_record)"
  [[ -s "${rec}" ]] && return 0
  mkdir -p "${NODE_DIR}"
  {
    for s in "${NODE_SYSCTLS[@]}"; do
      echo "sysctl ${s} $(sysctl -n "${s}" 2>/dev/null || echo -)"
    done
    for p in "${NODE_HOST_PATHS[@]}"; do
      [[ -e "${p}" ]] && echo "path ${p}"
    done
    for d in $(node_cgroup_dirs); do
      [[ -d "${d}" ]] && echo "cgroup ${d}"
    done
    ip link show "${NODE_BRIDGE}" >/dev/null 2>&1 && echo "bridge ${NODE_BRIDGE}"
    local cmd table
    for cmd in $(iptables_commands); do
      for table in "${NODE_IPTABLES_TABLES[@]}"; do
        kube_chains "${cmd}" "${table}" | sed "s/^/chain ${cmd} ${table} /"
      done
    done
    true
  } >"${rec}.tmp"
  mv "${rec}.tmp" "${rec}"
}

# node_cgroup_dirs: where kubelet's pods cgroup is, in every hierarchy.
node_cgroup_dirs() {
  local d
  if [[ -f /sys/fs/cgroup/cgroup.controllers && ! -d /sys/fs/cgroup/memory ]]; then
    echo "/sys/fs/cgroup/${NODE_CGROUP_NAME}"
    return
  fi
  for d in /sys/fs/cgroup/*/; do
    [[ -L "${d%/}" ]] && continue
    echo "${d}${NODE_CGROUP_NAME}"
  done
}

recorded() { grep -qxF "$1" "$(node_record)" 2>/dev/null; }

iptables_commands() {
  local cmd
  for cmd in iptables ip6tables; do
    command -v "${cmd}" >/dev/null && echo "${cmd}"
  done
}

# kube_chains CMD TABLE: the KUBE-* chains in TABLE.
kube_chains() {
  "$1" -w 5 -t "$2" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ { print $2 }'
}

# remove_kube_chains deletes the KUBE-* chains that were not there before, and the rules that
# jump to them.
remove_kube_chains() {
  local cmd table chain rule new
  for cmd in $(iptables_commands); do
    for table in "${NODE_IPTABLES_TABLES[@]}"; do
      new=()
      for chain in $(kube_chains "${cmd}" "${table}"); do
        recorded "chain ${cmd} ${table} ${chain}" || new+=("${chain}")
      done
      ((${#new[@]})) || continue
      for chain in "${new[@]}"; do
        while IFS= read -r rule; do
          # The rule as iptables -S prints it, quoted comments and all, with -A made -D.
          eval "\"\${cmd}\" -w 5 -t \"\${table}\" -D ${rule#-A }" || true
        done < <("${cmd}" -w 5 -t "${table}" -S | awk -v c="${chain}" '$1 == "-A" && $2 != c && / -j / { for (i = 3; i < NF; i++) if ($i == "-j" && $(i + 1) == c) { print; next } }')
      done
      for chain in "${new[@]}"; do "${cmd}" -w 5 -t "${table}" -F "${chain}" 2>/dev/null || true; done
      for chain in "${new[@]}"; do
        "${cmd}" -w 5 -t "${table}" -X "${chain}" 2>/dev/null || log "WARNING: node: cannot delete the ${cmd} chain ${table}/${chain}"
      done
    done
  done
}

# ---------------------------------------------------------------------------
# Certificates and configuration

node_certs() {
  # kubelet's client certificate: the Node authorizer knows it as the node NODE_NAME.
  make_cert "kubelet-${NODE_NAME}" ca "system:node:${NODE_NAME}" system:nodes client
  # kubelet serves on the node's address; kube-apiserver verifies it with the cluster CA
  # (--kubelet-certificate-authority).
  make_cert "kubelet-serving-${NODE_NAME}" ca "${NODE_NAME}" - server "$(node_ip)" "${NODE_NAME}" localhost 127.0.0.1
}

write_containerd_config() {
  local dir="${NODE_DIR}/containerd"
  mkdir -p "${dir}" "${NODE_DIR}/cni/net.d" "${NODE_DIR}/run"
  cat >"${dir}/config.toml" <<EOF
# Written by hack/local-up.sh: the local plane's real node.
version = 4
root = '${dir}/root'
state = '${dir}/state'
oom_score = 0
# NRI would listen on a fixed socket under /var/run; nothing here uses it.
disabled_plugins = ['io.containerd.nri.v1.nri']

[plugins.'io.containerd.server.v1.grpc']
  address = '${CONTAINERD_SOCK}'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '${CONTAINERD_SOCK}.ttrpc'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'localhost/pause:local'

[plugins.'io.containerd.cri.v1.runtime']
  # No CAP_SYS_RESOURCE here: a negative oom_score_adj would be refused.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '${TOOLS_BIN}/runc'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['${CNI_BIN_DIR}']
    conf_dir = '${NODE_DIR}/cni/net.d'
    use_internal_loopback = true

# The streaming server (exec, attach, port-forward) on a free loopback port; kubelet proxies to it.
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
EOF
  # bridge: pods on NODE_BRIDGE, the node's address their gateway; host-local hands out the pod
  # CIDR (the Node's spec.podCIDR) and keeps its leases under the node's directory; portmap
  # serves hostPort. No masquerading: pods reach the host, not the outside.
  cat >"${NODE_DIR}/cni/net.d/10-sandbox-local.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sandbox-local",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${NODE_BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "${NODE_POD_CIDR}", "gateway": "$(node_ip)"}]],
        "dataDir": "${NODE_DIR}/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

write_kubelet_config() {
  mkdir -p "${NODE_DIR}/kubelet"
  write_kubeconfig "${KUBECONFIGS}/kubelet.kubeconfig" "system:node:${NODE_NAME}" "kubelet-${NODE_NAME}"
  cat >"${NODE_DIR}/kubelet-config.yaml" <<EOF
# Written by hack/local-up.sh: the local plane's real node.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(node_ip)
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
tlsCertFile: ${CERTS}/kubelet-serving-${NODE_NAME}.crt
tlsPrivateKeyFile: ${CERTS}/kubelet-serving-${NODE_NAME}.key
# kube-apiserver's client certificate is checked against the cluster CA, and what it may do is
# asked of kube-apiserver (SubjectAccessReview): exec, logs and port-forward pass through here.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${CERTS}/ca.crt}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
cgroupDriver: cgroupfs
# cgroup v1 is all some hosts have; kubelet refuses it unless told.
failCgroupV1: false
# Without CAP_SYS_RESOURCE: no negative oom_score_adj, no open-files limit above the hard one.
oomScoreAdj: 0
maxOpenFiles: 20000
failSwapOn: false
# No KUBE-FIREWALL chain (nothing here needs it); the hint and canary chains kubelet makes anyway
# go at stop.
makeIPTablesUtilChains: false
podLogsDirectory: ${NODE_DIR}/pod-logs
# The imported images are the only ones: never collect them, never evict for a busy shared disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
EOF
}

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

probe_containerd() {
  "${TOOLS_BIN}/ctr" --address "${CONTAINERD_SOCK}" version >/dev/null 2>&1
}

start_containerd() {
  record_host
  write_containerd_config
  # The bridge with the node's address, before kubelet, which serves there; the bridge plugin
  # finds it and adds the pods' ends.
  ip link show "${NODE_BRIDGE}" >/dev/null 2>&1 || ip link add "${NODE_BRIDGE}" type bridge
  ip addr replace "$(node_ip)/${NODE_POD_CIDR#*/}" dev "${NODE_BRIDGE}"
  ip link set "${NODE_BRIDGE}" up
  # A containerd without its root directory has no containers: stop removed them, so the pods
  # bound to this node are gone too. They are deleted, and their owners make new ones (a pod
  # that never restarts would otherwise stay Failed).
  local fresh=false
  [[ -d "${NODE_DIR}/containerd/root" ]] || fresh=true
  # containerd finds its runc shim on PATH.
  PATH="${TOOLS_BIN}:${PATH}" launch containerd --config "${NODE_DIR}/containerd/config.toml" --log-level warn
  wait_ready containerd probe_containerd
  import_node_images
  if [[ "${fresh}" == true ]]; then
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

probe_kubelet() {
  curl -fsS --max-time 2 "http://127.0.0.1:${KUBELET_HEALTHZ_PORT}/healthz" | grep -qx ok
}

start_kubelet() {
  node_certs
  write_kubelet_config
  ensure_node_object
  local policy="${MANIFESTS}/local-node-images.yaml"
  write_pull_policy "${policy}"
  kubectl_admin apply -f "${policy}" >/dev/null
  local start=${SECONDS}
  launch kubelet \
    --config="${NODE_DIR}/kubelet-config.yaml" \
    --kubeconfig="${KUBECONFIGS}/kubelet.kubeconfig" \
    --root-dir="${NODE_DIR}/kubelet" \
    --hostname-override="${NODE_NAME}" \
    --node-ip="$(node_ip)" \
    --node-labels=type=real \
    --v=1
  wait_ready kubelet probe_kubelet
  if ! kubectl_admin wait --for=condition=Ready --timeout="${START_TIMEOUT}s" "node/${NODE_NAME}" >/dev/null; then
    kubectl_admin get node "${NODE_NAME}" -o wide >&2 || true
    fail kubelet "node ${NODE_NAME} not Ready after ${START_TIMEOUT}s"
  fi
  lift_not_ready_taint "${NODE_NAME}"
  log "node: ${NODE_NAME} Ready $((SECONDS - start))s after kubelet's start"
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

# kill_node_containers kills every process in kubelet's pod cgroups, until none is left.
kill_node_containers() {
  local d f pid i left
  for ((i = 0; i < 50; i++)); do
    left=0
    for d in $(node_cgroup_dirs); do
      [[ -d "${d}" ]] || continue
      while IFS= read -r f; do
        while IFS= read -r pid; do
          [[ -n "${pid}" ]] || continue
          kill -KILL "${pid}" 2>/dev/null && left=1
        done <"${f}"
      done < <(find "${d}" -name cgroup.procs 2>/dev/null)
    done
    ((left == 0)) && return 0
    sleep 0.1
  done
  log "WARNING: node: processes left in the pod cgroups"
}

# kill_node_shims kills the runc shims of this plane's containerd (they outlive it by design).
kill_node_shims() {
  local shim pid exe
  shim="$(readlink -f "${TOOLS_BIN}/containerd-shim-runc-v2" 2>/dev/null)" || return 0
  [[ -n "${shim}" ]] || return 0
  for pid in $(pgrep -f containerd-shim-runc-v2 || true); do
    exe="$(readlink "/proc/${pid}/exe" 2>/dev/null || true)"
    [[ "${exe% (deleted)}" == "${shim}" ]] && kill -KILL "${pid}" 2>/dev/null
  done
  return 0
}

# unmount_under DIR...: unmounts every mount at or below each DIR, deepest first.
unmount_under() {
  local dir target
  for dir in "$@"; do
    [[ -e "${dir}" ]] || continue
    while IFS= read -r target; do
      umount "${target}" 2>/dev/null || umount -l "${target}" 2>/dev/null ||
        log "WARNING: node: cannot unmount ${target}"
    done < <(awk -v d="${dir}" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo |
      awk '{ print length($0), $0 }' | sort -rn | cut -d' ' -f2-)
  done
}

# node_cleanup undoes what the node did to the host, from the record made before its first start.
node_cleanup() {
  local rec kind a b p d
  rec="$(node_record)"
  kill_node_containers
  kill_node_shims
  local paths=("${NODE_DIR}")
  for p in "${NODE_HOST_PATHS[@]}"; do
    recorded "path ${p}" || paths+=("${p}")
  done
  unmount_under "${paths[@]}"
  if ip link show "${NODE_BRIDGE}" >/dev/null 2>&1 && ! recorded "bridge ${NODE_BRIDGE}"; then
    ip link del "${NODE_BRIDGE}" 2>/dev/null || log "WARNING: node: cannot delete the bridge ${NODE_BRIDGE}"
  fi
  for d in $(node_cgroup_dirs); do
    if [[ -d "${d}" ]] && ! recorded "cgroup ${d}"; then
      find "${d}" -depth -type d -exec rmdir {} + 2>/dev/null || log "WARNING: node: cannot remove the cgroup ${d}"
    fi
  done
  for p in "${paths[@]}"; do
    [[ -e "${p}" && "${p}" != "${NODE_DIR}" ]] && rm -rf --one-file-system "${p}"
  done
  remove_kube_chains
  if [[ -s "${rec}" ]]; then
    while read -r kind a b; do
      [[ "${kind}" == sysctl && "${b}" != - ]] || continue
      [[ "$(sysctl -n "${a}" 2>/dev/null)" == "${b}" ]] || sysctl -qw "${a}=${b}" >/dev/null ||
        log "WARNING: node: cannot restore ${a}=${b}"
    done <"${rec}"
  fi
  # Everything of the node goes, its record last: the host is as it was.
  if [[ -d "${NODE_DIR}" ]]; then
    find "${NODE_DIR}" -mindepth 1 -maxdepth 1 ! -name host-before -exec rm -rf --one-file-system {} +
  fi
  rm -f "${rec}"
  rmdir "${NODE_DIR}" 2>/dev/null || true
  log "node: host restored (containers, mounts, bridge, cgroups, paths, iptables chains, sysctls)"
}

# node_touched: the node ran, or left something behind.
node_touched() {
  [[ -e "${PIDS}/kubelet.pid" || -e "${PIDS}/containerd.pid" || -d "${NODE_DIR}" ]]
}

node_status() {
  local ready
  ready="$(kubectl_admin get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)"
  printf '%-24s %s\n' "node ${NODE_NAME}" "Ready=${ready:-unknown} (pods ${NODE_POD_CIDR} on ${NODE_BRIDGE}, kubelet $(node_ip):${KUBELET_PORT})"
}
