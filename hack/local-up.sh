#!/usr/bin/env bash
# Local control plane: etcd, kube-apiserver, kube-controller-manager,
# local-path-provisioner (the volumes), kube-scheduler, kwok (fake Nodes that run
# Pods), a real node (containerd and kubelet: see hack/lib/node.sh and
# docs/local-plane.md) when run as root on Linux, sandbox-etcd (the etcd of
# sandbox-apiserver alone) and sandbox-apiserver behind the aggregator, all as
# background processes on 127.0.0.1 (kubelet on its bridge's address). They
# start in this order and stop in the reverse one; stop also undoes what the
# real node did to the host and removes the plane's volumes.
#
# What each component runs (binary, flags, ports, readiness check, log) is one
# table in Go, hack/localplane/plane/components.go, which also starts and stops
# them (the local-plane command, built on first use); this script writes what
# they read (certificates, kubeconfigs, the node's configuration), starts them
# in order and makes the cluster's objects.
#
# Usage: hack/local-up.sh start|stop|status|restart
#        hack/local-up.sh start-sandbox-apiserver|stop-sandbox-apiserver|restart-sandbox-apiserver
#        hack/local-up.sh kill-sandbox-apiserver   (SIGKILL, no graceful stop)
#        hack/local-up.sh stop-sandbox-etcd|start-sandbox-etcd
#        hack/local-up.sh restart-kube-apiserver   (stop and start it alone, wait for /readyz)
#        hack/local-up.sh restart-kubelet|restart-containerd   (the real node's; its containers
#                                                 keep running)
#
# start is idempotent: running components are left alone, stopped ones are
# started. A sandbox-apiserver found running an embedded etcd (as a version of
# this script from before sandbox-etcd started it, in the same data directory)
# is restarted on sandbox-etcd, keeping its data.
# kill-sandbox-apiserver, stop-sandbox-etcd and restart-kube-apiserver disturb
# one component for the fault tests (test/e2e/faults_test.go) and leave the
# others running; start brings back whatever they left down.
#
# Everything lives under _output/local/: logs/, pids/, data/ (etcd/,
# sandbox-etcd/), certs/, kubeconfigs/, volumes/ (the PersistentVolumes, owner
# only; stop removes it), the real node's node/ and host-changes.json (its
# journal of host changes), and the admin kubeconfig. Binaries come from
# _output/tools/bin (hack/build-tools.sh) and _output/bin/sandbox-apiserver
# (make build).
#
# Environment (defaults in brackets):
#   ETCD_PORT [2379] ETCD_PEER_PORT [2380] KUBE_APISERVER_PORT [6443]
#   KUBE_CONTROLLER_MANAGER_PORT [10257] KUBE_SCHEDULER_PORT [10259]
#   KWOK_PORT [10247] SANDBOX_ETCD_PORT [2381] SANDBOX_ETCD_PEER_PORT [2382]
#   SANDBOX_APISERVER_PORT [8443] E2B_PORT [3049] (sandbox-apiserver's E2B endpoint)
#   SANDBOX_APISERVER_BIN [_output/bin/sandbox-apiserver]
#   SANDBOX_APISERVER_ARGS    extra flags for sandbox-apiserver (word-split)
#   SKIP_SANDBOX_APISERVER=1  start everything but sandbox-apiserver (sandbox-etcd
#                             runs, for a server started by hand)
#   KWOK_NODES [3]            number of fake Nodes
#   SANDBOX_WORK_DIR [_output/local/sandbox-work]  where kwok runs the commands of
#                             exec on any pod, and the file its logs and attach
#                             stream (container.log)
#   PORT_FORWARD_PORTS [18000-18099]  a pod's port P in this range forwards to
#                             127.0.0.1:P (kwok's ClusterPortForward)
#   PROFILING [false]         kube-apiserver serves /debug/pprof (make bench
#                             profiles it; sandbox-apiserver always does)
#   START_TIMEOUT [90]        seconds each component has to become ready
#   APISERVICE_TIMEOUT [120]  seconds the APIServices have to become Available,
#                             then again for kube-apiserver to serve their OpenAPI
#   STOP_TIMEOUT [20]         seconds between SIGTERM and SIGKILL
#   LOCAL_NODE [auto]         the real node: auto runs it as root on Linux when
#                             make tools built it, true insists, false never
#   NODE_NAME [local-node]    its Node's name
#   KUBELET_PORT [10250] KUBELET_HEALTHZ_PORT [10248]
#   NODE_POD_CIDR [10.88.0.0/24]  its pods' addresses; the first is the node's,
#                             on the bridge NODE_BRIDGE [sandbox0]
#   CNI_BIN_DIR [/usr/lib/cni]  Debian's CNI plugins
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"

OUT="${ROOT}/_output/local"
LOGS="${OUT}/logs"
PIDS="${OUT}/pids"
DATA="${OUT}/data"
CERTS="${OUT}/certs"
MANIFESTS="${OUT}/manifests"
VOLUMES="${OUT}/volumes"
ADMIN_KUBECONFIG="${OUT}/kubeconfig"
TOOLS_BIN="${ROOT}/_output/tools/bin"
KWOK_STAGES="${ROOT}/_output/tools/kwok-stages"

# The knobs hack/localplane reads (ports, SANDBOX_APISERVER_BIN, NODE_*, START_TIMEOUT, ...), with
# their defaults, from hack/localplane/plane/config.go; the others are this script's.
local_plane_build
plane_config="$(local_plane shell)" || die "hack/localplane: the configuration is not valid (see above)"
# shellcheck source=/dev/null
source <(printf '%s\n' "${plane_config}")
SKIP_SANDBOX_APISERVER="${SKIP_SANDBOX_APISERVER:-}"
KWOK_NODES="${KWOK_NODES:-3}"
SANDBOX_WORK_DIR="${SANDBOX_WORK_DIR:-${OUT}/sandbox-work}"
PORT_FORWARD_PORTS="${PORT_FORWARD_PORTS:-18000-18099}"
APISERVICE_TIMEOUT="${APISERVICE_TIMEOUT:-120}"

source "${ROOT}/hack/lib/node.sh"

APISERVICES=(
  v1beta1.agents.x-k8s.io
  v1alpha1.agents.x-k8s.io
  v1beta1.extensions.agents.x-k8s.io
  v1alpha1.extensions.agents.x-k8s.io
)

# The kinds each served group version must show in kube-apiserver's aggregated OpenAPI before
# start returns: kubectl explain and apply --validate=strict read them from there.
OPENAPI_KINDS=(
  agents.x-k8s.io:Sandbox
  extensions.agents.x-k8s.io:SandboxClaim
  extensions.agents.x-k8s.io:SandboxTemplate
  extensions.agents.x-k8s.io:SandboxWarmPool
)
OPENAPI_VERSIONS=(v1beta1 v1alpha1)

# The components in start order (stop runs it backwards), from their table in
# hack/localplane/plane/components.go: what each runs, its flags, ports, readiness check and log.
mapfile -t COMPONENTS < <(local_plane component names)
((${#COMPONENTS[@]})) || die "hack/localplane lists no components"
NODE_COMPONENTS=" containerd kubelet "

kubectl_admin() {
  "${TOOLS_BIN}/kubectl" --kubeconfig "${ADMIN_KUBECONFIG}" --request-timeout=20s "$@"
}

# ---------------------------------------------------------------------------
# Components: hack/localplane runs them (local-plane component ...); this script writes what
# they read, starts them in order and makes the cluster's objects.

check_tools() {
  local t missing=()
  for t in etcd kube-apiserver kube-controller-manager local-path-provisioner kube-scheduler kwok kubectl; do
    [[ -x "${TOOLS_BIN}/${t}" ]] || missing+=("${t}")
  done
  if ((${#missing[@]})); then
    die "missing tools in _output/tools/bin: ${missing[*]} (run: make tools)"
  fi
  [[ -f "${KWOK_STAGES}/node-initialize.yaml" ]] || die "kwok stage files missing in _output/tools/kwok-stages (run: make tools)"
}

# is_running NAME: its PID file names a live process of its binary.
is_running() { local_plane component status "$1" >/dev/null 2>&1; }

# pid_of NAME: the process ID in its PID file.
pid_of() {
  local f="${PIDS}/$1.pid"
  [[ -s "${f}" ]] && cat "${f}"
}

stop_component() { local_plane component stop "$1"; }

# fail NAME MESSAGE: reports a component that did not do what start waits for, with the end of
# its log, stops it and exits non-zero.
fail() {
  local name="$1" msg="$2"
  log "ERROR: ${name}: ${msg}"
  if [[ -f "${LOGS}/${name}.log" ]]; then
    echo "---- last 30 lines of ${LOGS#"${ROOT}/"}/${name}.log ----" >&2
    tail -n 30 "${LOGS}/${name}.log" >&2
    echo "----" >&2
  fi
  stop_component "${name}" || true
  exit 1
}

# start_component NAME: unless it runs, writes what it reads (prepare_NAME, where there is one),
# starts it and waits until it is ready (local-plane checks its ports first), then does what
# follows its start (after_NAME).
start_component() {
  local name="$1" fn="${1//-/_}"
  if is_running "${name}"; then
    log "${name}: already running (PID $(pid_of "${name}"))"
    return 0
  fi
  if declare -F "prepare_${fn}" >/dev/null; then "prepare_${fn}"; fi
  local_plane component start "${name}" || exit 1
  if declare -F "after_${fn}" >/dev/null; then "after_${fn}"; fi
}

# ---------------------------------------------------------------------------
# Certificates and kubeconfigs: their table is hack/localplane/plane/credentials.go.

b64() { base64 -w0 <"$1"; }

# ---------------------------------------------------------------------------
# What the components read


# remove_volumes removes the data of this plane's volumes (make down; the PersistentVolumes stay in
# etcd and come back empty on the next start).
remove_volumes() {
  [[ -d "${VOLUMES}" && ! -L "${VOLUMES}" ]] || return 0
  rm -rf --one-file-system "${VOLUMES}"
  log "volumes: removed ${VOLUMES#"${ROOT}/"} (the data of this plane's PersistentVolumes)"
}

# write_kwok_streams FILE: kwok's ClusterExec, ClusterLogs, ClusterAttach and
# ClusterPortForward for every pod. Commands run in SANDBOX_WORK_DIR as the user
# running this plane; logs and attach stream SANDBOX_WORK_DIR/container.log; a
# pod's port P in PORT_FORWARD_PORTS reaches 127.0.0.1:P. kwok has one such
# configuration for all pods: they share the directory, the log and the ports
# (see docs/streams.md).
write_kwok_streams() {
  local file="$1" first last port
  first="${PORT_FORWARD_PORTS%-*}" last="${PORT_FORWARD_PORTS#*-}"
  [[ "${first}" =~ ^[0-9]+$ && "${last}" =~ ^[0-9]+$ && "${first}" -le "${last}" ]] ||
    die "PORT_FORWARD_PORTS must be FIRST-LAST, got ${PORT_FORWARD_PORTS}"
  mkdir -p "${SANDBOX_WORK_DIR}" "$(dirname "${file}")"
  touch "${SANDBOX_WORK_DIR}/container.log"
  {
    cat <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: sandbox-work
spec:
  execs:
  - local:
      workDir: ${SANDBOX_WORK_DIR}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: sandbox-work
spec:
  logs:
  - logsFile: ${SANDBOX_WORK_DIR}/container.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata:
  name: sandbox-work
spec:
  attaches:
  - logsFile: ${SANDBOX_WORK_DIR}/container.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata:
  name: local-ports
spec:
  forwards:
EOF
    for ((port = first; port <= last; port++)); do
      printf '  - ports: [%d]\n    target: {address: 127.0.0.1, port: %d}\n' "${port}" "${port}"
    done
  } >"${file}"
}

prepare_kwok() { write_kwok_streams "${OUT}/kwok/streams.yaml"; }

# ---------------------------------------------------------------------------
# Cluster objects

# Renders artifacts/local/*.yaml (CA bundle and port filled in) and applies them.
apply_local_manifests() {
  mkdir -p "${MANIFESTS}"
  rm -f "${MANIFESTS}"/*.yaml
  local f ca
  ca="$(b64 "${CERTS}/ca.crt")"
  for f in "${ROOT}"/artifacts/local/*.yaml; do
    sed -e "s|@CA_BUNDLE@|${ca}|g" -e "s|@SANDBOX_APISERVER_PORT@|${SANDBOX_APISERVER_PORT}|g" \
      -e "s|@VOLUMES_DIR@|${VOLUMES}|g" \
      "${f}" >"${MANIFESTS}/$(basename "${f}")"
  done
  log "applying artifacts/local"
  # Namespace first, the APIServices last (after the Service they point at).
  local ordered=("${MANIFESTS}/namespace.yaml")
  for f in "${MANIFESTS}"/*.yaml; do
    [[ "${f}" == */namespace.yaml || "${f}" == */apiservices.yaml ]] || ordered+=("${f}")
  done
  ordered+=("${MANIFESTS}/apiservices.yaml")
  # A StorageClass's provisioner cannot change: the class of a plane kept from before
  # local-path-provisioner (kube-controller-manager's host-path provisioner) is made anew.
  local provisioner
  provisioner="$(kubectl_admin get storageclass standard -o jsonpath='{.provisioner}' 2>/dev/null || true)"
  if [[ -n "${provisioner}" && "${provisioner}" != rancher.io/local-path ]]; then
    kubectl_admin delete storageclass standard | sed 's/^/    /' >&2
  fi
  for f in "${ordered[@]}"; do
    kubectl_admin apply -f "${f}" | sed 's/^/    /' >&2
  done
}

# Creates the fake Nodes, waits until kwok reports them Ready and lifts the
# not-ready taint the NodeTaint admission put on them (there is no node
# lifecycle controller to do it).
make_nodes() {
  local i names=() node
  for ((i = 0; i < KWOK_NODES; i++)); do names+=("kwok-node-${i}"); done
  # artifacts/local/kwok/nodes.yaml holds the three default Nodes; more are
  # stamped from its first document.
  local manifests
  if ((KWOK_NODES == 3)); then
    manifests=$(<"${ROOT}/artifacts/local/kwok/nodes.yaml")
  else
    manifests=$(for node in "${names[@]}"; do
      awk '/^---/ { exit } { print }' "${ROOT}/artifacts/local/kwok/nodes.yaml" |
        sed "s/kwok-node-0/${node}/g"
      echo ---
    done)
  fi
  kubectl_admin apply -f - <<<"${manifests}" >/dev/null
  # A plain apply leaves the status of Nodes kept from an earlier start alone; the
  # capacity (pods per Node) is applied to the status subresource as well.
  kubectl_admin apply --server-side --subresource=status --field-manager=local-up --force-conflicts \
    -f - <<<"${manifests}" >/dev/null
  # kwok writes the kubelet port (KWOK_PORT, where it serves exec, logs and
  # port-forward) only when it first initializes a Node: a Node kept from an
  # earlier start, or from a version of this script before kwok served the
  # kubelet API, would send kube-apiserver to another port.
  for node in "${names[@]}"; do
    kubectl_admin patch node "${node}" --subresource=status --type=merge \
      -p "{\"status\":{\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":${KWOK_PORT}}}}}" >/dev/null
  done
  log "nodes: waiting for ${names[*]} to be Ready"
  if ! kubectl_admin wait --for=condition=Ready --timeout="${START_TIMEOUT}s" \
    "${names[@]/#/node/}" >/dev/null; then
    kubectl_admin get nodes -o wide >&2 || true
    fail kwok "nodes not Ready after ${START_TIMEOUT}s"
  fi
  for node in "${names[@]}"; do
    lift_not_ready_taint "${node}"
  done
  KWOK_NODE_NAMES=("${names[@]}")
  log "nodes: ${names[*]} Ready and schedulable"
}

# lift_not_ready_taint NODE: removes the taint NodeTaint admission put on a new Node (there is no
# node lifecycle controller to lift it once the Node is Ready).
lift_not_ready_taint() {
  if kubectl_admin get node "$1" -o jsonpath='{.spec.taints[*].key}' |
    grep -qw node.kubernetes.io/not-ready; then
    kubectl_admin taint node "$1" node.kubernetes.io/not-ready:NoSchedule- >/dev/null
  fi
}

wait_apiservices() {
  log "waiting up to ${APISERVICE_TIMEOUT}s for the APIServices to be Available"
  # kube-apiserver checks an APIService that failed its check again after a back-off that grows
  # to some seconds while the server starts; a change to the object has it checked at once, now
  # that the server answers.
  kubectl_admin annotate apiservices "${APISERVICES[@]}" --overwrite \
    "sandbox-apiserver.dev/server-started=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null
  local deadline=$((SECONDS + APISERVICE_TIMEOUT)) not_ready
  while true; do
    is_running sandbox-apiserver || fail sandbox-apiserver "exited while waiting for the APIServices"
    not_ready="$(kubectl_admin get apiservices "${APISERVICES[@]}" \
      -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Available")].status}{"\n"}{end}' 2>/dev/null |
      grep -v '=True$' || true)"
    if [[ -z "${not_ready}" ]] && kubectl_admin get apiservices "${APISERVICES[@]}" >/dev/null 2>&1; then
      log "APIServices Available: ${APISERVICES[*]}"
      return 0
    fi
    if ((SECONDS >= deadline)); then
      kubectl_admin get apiservices "${APISERVICES[@]}" >&2 || true
      kubectl_admin get apiservices "${APISERVICES[@]}" \
        -o jsonpath='{range .items[*]}{.metadata.name}: {.status.conditions[?(@.type=="Available")].message}{"\n"}{end}' >&2 || true
      fail sandbox-apiserver "APIServices not Available after ${APISERVICE_TIMEOUT}s"
    fi
    sleep 1
  done
}

# openapi_missing prints each kind and version kube-apiserver's aggregated OpenAPI v2 or v3 does
# not describe yet (nothing once both do). kube-apiserver aggregates a new APIService's OpenAPI
# some seconds after it is Available; until then kubectl explain finds no such resource.
openapi_missing() {
  local v2 v3 entry group kind version gvk
  v2="$(kubectl_admin get --raw /openapi/v2 2>/dev/null)" || v2=""
  for version in "${OPENAPI_VERSIONS[@]}"; do
    for entry in "${OPENAPI_KINDS[@]}"; do
      group="${entry%%:*}" kind="${entry#*:}"
      # The definitions carry their kind as x-kubernetes-group-version-kind, keys in this order.
      gvk="\"group\":\"${group}\",\"kind\":\"${kind}\",\"version\":\"${version}\""
      [[ "${v2}" == *"${gvk}"* ]] || echo "v2 ${group}/${version} ${kind}"
    done
  done
  for version in "${OPENAPI_VERSIONS[@]}"; do
    for group in agents.x-k8s.io extensions.agents.x-k8s.io; do
      v3="$(kubectl_admin get --raw "/openapi/v3/apis/${group}/${version}" 2>/dev/null)" || v3=""
      for entry in "${OPENAPI_KINDS[@]}"; do
        [[ "${entry%%:*}" == "${group}" ]] || continue
        kind="${entry#*:}"
        gvk="\"group\":\"${group}\",\"kind\":\"${kind}\",\"version\":\"${version}\""
        [[ "${v3}" == *"${gvk}"* ]] || echo "v3 ${group}/${version} ${kind}"
      done
    done
  done
}

wait_openapi() {
  local deadline=$((SECONDS + APISERVICE_TIMEOUT)) missing
  while true; do
    missing="$(openapi_missing)"
    if [[ -z "${missing}" ]]; then
      log "kube-apiserver's OpenAPI v2 and v3 describe every kind in both versions"
      return 0
    fi
    if ((SECONDS >= deadline)); then
      log "ERROR: not in kube-apiserver's OpenAPI after ${APISERVICE_TIMEOUT}s:"
      echo "    ${missing//$'\n'/$'\n'    }" >&2
      fail sandbox-apiserver "OpenAPI not aggregated after ${APISERVICE_TIMEOUT}s"
    fi
    sleep 1
  done
}

# ---------------------------------------------------------------------------
# Commands

prepare() {
  check_tools
  mkdir -p "${LOGS}" "${PIDS}" "${DATA}"
  # The volumes' directory, the owner's alone; one that is not a directory of this user is refused.
  local_plane volumes-dir
  local_plane credentials
}

sandbox_binary_present() {
  if [[ ! -x "${SANDBOX_APISERVER_BIN}" ]]; then
    log "ERROR: sandbox-apiserver binary not found at ${SANDBOX_APISERVER_BIN#"${ROOT}/"} (run: make build)"
    return 1
  fi
}

cmd_start() {
  prepare
  # Check every port before starting anything, so a conflict is reported
  # before half a cluster is up.
  local name node=false
  node_enabled && node=true
  for name in "${COMPONENTS[@]}"; do
    [[ "${name}" == sandbox-apiserver && -n "${SKIP_SANDBOX_APISERVER}" ]] && continue
    [[ "${NODE_COMPONENTS}" == *" ${name} "* && "${node}" == false ]] && continue
    is_running "${name}" || local_plane component check-ports "${name}" || exit 1
  done
  if [[ -z "${SKIP_SANDBOX_APISERVER}" ]] && ! sandbox_binary_present; then
    exit 1
  fi

  start_component etcd
  start_component kube-apiserver
  apply_local_manifests
  start_component kube-controller-manager
  start_component local-path-provisioner
  start_component kube-scheduler
  start_component kwok
  make_nodes
  if [[ "${node}" == true ]]; then
    start_component containerd
    start_component kubelet
  fi
  taint_kwok_nodes "${KWOK_NODE_NAMES[@]}"
  start_sandbox_etcd_first
  if [[ -n "${SKIP_SANDBOX_APISERVER}" ]]; then
    log "SKIP_SANDBOX_APISERVER set: sandbox-apiserver not started"
  else
    start_component sandbox-apiserver
    wait_apiservices
    wait_openapi
  fi
  log "local control plane is up; logs in ${LOGS#"${ROOT}/"}"
  echo "export KUBECONFIG=${ADMIN_KUBECONFIG}"
}

cmd_stop() {
  local i
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop_component "${COMPONENTS[i]}"
    # Once containerd is down: the containers, their shims and what the node did to the host.
    # What cannot be undone now stays in the journal for the next stop; the rest still stops.
    if [[ "${COMPONENTS[i]}" == containerd ]] && node_touched; then
      node_cleanup || log "WARNING: node: the host is not fully restored; hack/local-up.sh stop tries again"
    fi
  done
  remove_volumes
  # A killed process may take a moment to release its sockets.
  local name port left=0 i
  for name in "${COMPONENTS[@]}"; do
    for port in $(local_plane component ports "${name}"); do
      for ((i = 0; i < 25; i++)); do
        port_in_use "${port}" || break
        sleep 0.2
      done
      if port_in_use "${port}"; then
        log "WARNING: port ${port} (${name}) still has a listener:"
        port_owner "${port}" | sed 's/^/    /' >&2
        left=1
      fi
    done
  done
  ((left == 0)) && log "local control plane stopped"
  return 0
}

cmd_status() {
  local name state rc=0
  for name in "${COMPONENTS[@]}"; do
    if [[ "${NODE_COMPONENTS}" == *" ${name} "* ]] && ! node_touched; then
      printf '%-24s %s\n' "${name}" "not run (no real node: LOCAL_NODE=${LOCAL_NODE})"
      continue
    fi
    state="$(local_plane component status "${name}" 2>/dev/null)" || rc=1
    printf '%-24s %s\n' "${name}" "${state}"
  done
  is_running kubelet && node_status
  return "${rc}"
}

# sandbox_apiserver_embedded: the running sandbox-apiserver was started without
# --etcd-servers, so it runs an embedded etcd (a version of this script from
# before sandbox-etcd started it so).
sandbox_apiserver_embedded() {
  local pid args
  pid="$(pid_of sandbox-apiserver)" || return 1
  args="$(tr '\0' '\n' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
  [[ $'\n'"${args}" != *$'\n--etcd-servers='* ]]
}

# start_sandbox_etcd_first starts sandbox-etcd unless it runs. A sandbox-apiserver
# with an embedded etcd holds the same data directory: it is stopped first, and
# the caller starts it again on sandbox-etcd. One already on sandbox-etcd (which
# was stopped) is left running; it reconnects by itself.
start_sandbox_etcd_first() {
  is_running sandbox-etcd && return 0
  if is_running sandbox-apiserver && sandbox_apiserver_embedded; then
    log "sandbox-apiserver runs an embedded etcd: restarting it on sandbox-etcd (same data directory)"
    stop_component sandbox-apiserver
  fi
  start_component sandbox-etcd
}

cmd_start_sandbox_apiserver() {
  prepare
  is_running kube-apiserver || die "kube-apiserver is not running (run: hack/local-up.sh start)"
  sandbox_binary_present || exit 1
  start_sandbox_etcd_first
  start_component sandbox-apiserver
  wait_apiservices
  wait_openapi
}

cmd_start_sandbox_etcd() {
  prepare
  start_component sandbox-etcd
}

# cmd_kill_sandbox_apiserver ends sandbox-apiserver with SIGKILL: no graceful
# shutdown, no lease released, requests in flight cut off.
cmd_kill_sandbox_apiserver() { local_plane component kill sandbox-apiserver; }

# cmd_restart_kube_apiserver stops and starts kube-apiserver alone (its etcd,
# the controllers, kwok and sandbox-apiserver keep running) and waits for its
# /readyz.
cmd_restart_kube_apiserver() {
  prepare
  is_running etcd || die "etcd is not running (run: hack/local-up.sh start)"
  stop_component kube-apiserver
  start_component kube-apiserver
}

# cmd_restart_node_component NAME stops and starts the real node's kubelet or containerd alone;
# the containers run on (containerd's shims keep them) and kubelet finds them again.
cmd_restart_node_component() {
  prepare
  is_running "$1" || die "$1 is not running (no real node here: hack/local-up.sh status)"
  stop_component "$1"
  start_component "$1"
}

# usage prints the comment block at the top of this file.
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}" >&2
  exit 2
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  restart) cmd_stop; cmd_start ;;
  start-sandbox-apiserver) cmd_start_sandbox_apiserver ;;
  stop-sandbox-apiserver) stop_component sandbox-apiserver ;;
  restart-sandbox-apiserver) stop_component sandbox-apiserver; cmd_start_sandbox_apiserver ;;
  kill-sandbox-apiserver) cmd_kill_sandbox_apiserver ;;
  start-sandbox-etcd) cmd_start_sandbox_etcd ;;
  stop-sandbox-etcd) stop_component sandbox-etcd ;;
  restart-kube-apiserver) cmd_restart_kube_apiserver ;;
  restart-kubelet|restart-containerd) cmd_restart_node_component "${1#restart-}" ;;
  *) usage ;;
esac
