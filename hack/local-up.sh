#!/usr/bin/env bash
# Local control plane: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok (fake Nodes that run Pods), a real node (containerd and
# kubelet: see hack/lib/node.sh and docs/local-plane.md) when run as root on
# Linux, sandbox-etcd (the etcd of sandbox-apiserver alone) and
# sandbox-apiserver behind the aggregator, all as background processes on
# 127.0.0.1 (kubelet on its bridge's address). They start in this order and
# stop in the reverse one; stop also undoes what the real node did to the host.
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
# sandbox-etcd/), certs/, kubeconfigs/ and the admin kubeconfig. Binaries come
# from _output/tools/bin (hack/build-tools.sh) and _output/bin/sandbox-apiserver
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
KUBECONFIGS="${OUT}/kubeconfigs"
MANIFESTS="${OUT}/manifests"
ADMIN_KUBECONFIG="${OUT}/kubeconfig"
TOOLS_BIN="${ROOT}/_output/tools/bin"
KWOK_STAGES="${ROOT}/_output/tools/kwok-stages"

ETCD_PORT="${ETCD_PORT:-2379}"
ETCD_PEER_PORT="${ETCD_PEER_PORT:-2380}"
KUBE_APISERVER_PORT="${KUBE_APISERVER_PORT:-6443}"
KUBE_CONTROLLER_MANAGER_PORT="${KUBE_CONTROLLER_MANAGER_PORT:-10257}"
KUBE_SCHEDULER_PORT="${KUBE_SCHEDULER_PORT:-10259}"
KWOK_PORT="${KWOK_PORT:-10247}"
SANDBOX_ETCD_PORT="${SANDBOX_ETCD_PORT:-2381}"
SANDBOX_ETCD_PEER_PORT="${SANDBOX_ETCD_PEER_PORT:-2382}"
SANDBOX_APISERVER_PORT="${SANDBOX_APISERVER_PORT:-8443}"
SANDBOX_APISERVER_BIN="${SANDBOX_APISERVER_BIN:-${ROOT}/_output/bin/sandbox-apiserver}"
SANDBOX_APISERVER_ARGS="${SANDBOX_APISERVER_ARGS:-}"
SKIP_SANDBOX_APISERVER="${SKIP_SANDBOX_APISERVER:-}"
KWOK_NODES="${KWOK_NODES:-3}"
SANDBOX_WORK_DIR="${SANDBOX_WORK_DIR:-${OUT}/sandbox-work}"
PORT_FORWARD_PORTS="${PORT_FORWARD_PORTS:-18000-18099}"
PROFILING="${PROFILING:-false}"
START_TIMEOUT="${START_TIMEOUT:-90}"
APISERVICE_TIMEOUT="${APISERVICE_TIMEOUT:-120}"
STOP_TIMEOUT="${STOP_TIMEOUT:-20}"

source "${ROOT}/hack/lib/node.sh"

SERVICE_CIDR="10.0.0.0/24"
SERVICE_IP="10.0.0.1"
SANDBOX_USER="system:sandbox-apiserver"
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

# Start order; stop runs it backwards.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok containerd kubelet sandbox-etcd sandbox-apiserver)
NODE_COMPONENTS=" containerd kubelet "

kubectl_admin() {
  "${TOOLS_BIN}/kubectl" --kubeconfig "${ADMIN_KUBECONFIG}" --request-timeout=20s "$@"
}

# ---------------------------------------------------------------------------
# Binaries and ports

component_bin() {
  case "$1" in
    sandbox-apiserver) echo "${SANDBOX_APISERVER_BIN}" ;;
    sandbox-etcd) echo "${TOOLS_BIN}/etcd" ;;
    *) echo "${TOOLS_BIN}/$1" ;;
  esac
}

component_ports() {
  case "$1" in
    etcd) echo "${ETCD_PORT} ${ETCD_PEER_PORT}" ;;
    kube-apiserver) echo "${KUBE_APISERVER_PORT}" ;;
    kube-controller-manager) echo "${KUBE_CONTROLLER_MANAGER_PORT}" ;;
    kube-scheduler) echo "${KUBE_SCHEDULER_PORT}" ;;
    kwok) echo "${KWOK_PORT}" ;;
    kubelet) echo "${KUBELET_PORT} ${KUBELET_HEALTHZ_PORT}" ;;
    sandbox-etcd) echo "${SANDBOX_ETCD_PORT} ${SANDBOX_ETCD_PEER_PORT}" ;;
    sandbox-apiserver) echo "${SANDBOX_APISERVER_PORT}" ;;
  esac
}

check_tools() {
  local t missing=()
  for t in etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl; do
    [[ -x "${TOOLS_BIN}/${t}" ]] || missing+=("${t}")
  done
  if ((${#missing[@]})); then
    die "missing tools in _output/tools/bin: ${missing[*]} (run: make tools)"
  fi
  [[ -f "${KWOK_STAGES}/node-initialize.yaml" ]] || die "kwok stage files missing in _output/tools/kwok-stages (run: make tools)"
  command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"
  command -v curl >/dev/null || die "curl not found (apt-get install curl)"
}

check_ports_free() {
  local name="$1" port
  for port in $(component_ports "${name}"); do
    if port_in_use "${port}"; then
      log "ERROR: ${name}: port ${port} is already in use (set the matching *_PORT variable to move it):"
      port_owner "${port}" | sed 's/^/    /' >&2
      exit 1
    fi
  done
}

# ---------------------------------------------------------------------------
# Processes

pid_of() {
  local f="${PIDS}/$1.pid"
  [[ -s "${f}" ]] && cat "${f}"
}

# pid_alive PID: the process exists and is not a zombie.
pid_alive() {
  local pid="$1" state
  [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null || return 1
  state="$(awk '{ print $3 }' "/proc/${pid}/stat" 2>/dev/null || true)"
  [[ "${state}" != "Z" ]]
}

# is_running NAME: its PID file names a live process running its binary (so a
# recycled PID is not mistaken for it).
is_running() {
  local name="$1" pid exe
  pid="$(pid_of "${name}")" || return 1
  pid_alive "${pid}" || return 1
  exe="$(readlink "/proc/${pid}/exe" 2>/dev/null || true)"
  exe="${exe% (deleted)}"
  [[ -z "${exe}" || "$(basename "${exe}")" == "$(basename "$(component_bin "${name}")")" ]]
}

# launch NAME ARGS...: runs the component's binary in its own session, output
# appended to its log, PID recorded by the child itself before it execs.
launch() {
  local name="$1"; shift
  local bin pidfile="${PIDS}/${name}.pid" logfile="${LOGS}/${name}.log"
  bin="$(component_bin "${name}")"
  rm -f "${pidfile}"
  printf '\n==== %s starting %s %s\n' "$(date -u +%FT%TZ)" "${name}" "$*" >>"${logfile}"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "${pidfile}" "${bin}" "$@" \
    </dev/null >>"${logfile}" 2>&1 &
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s "${pidfile}" ]] && return 0
    sleep 0.1
  done
  fail "${name}" "did not start"
}

stop_component() {
  local name="$1" pid i
  pid="$(pid_of "${name}")" || { return 0; }
  if ! pid_alive "${pid}"; then
    log "${name}: not running (removing stale PID file)"
    rm -f "${PIDS}/${name}.pid"
    return 0
  fi
  if ! is_running "${name}"; then
    log "${name}: PID ${pid} is not ${name} any more (removing stale PID file)"
    rm -f "${PIDS}/${name}.pid"
    return 0
  fi
  log "${name}: stopping (PID ${pid})"
  kill -TERM "${pid}" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
    pid_alive "${pid}" || break
    sleep 0.2
  done
  if pid_alive "${pid}"; then
    log "${name}: still running after ${STOP_TIMEOUT}s, sending SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      pid_alive "${pid}" || break
      sleep 0.1
    done
  fi
  pid_alive "${pid}" && log "WARNING: ${name}: PID ${pid} survived SIGKILL"
  rm -f "${PIDS}/${name}.pid"
}

# fail NAME MESSAGE: reports a component that did not come up, with the end of
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

# wait_ready NAME PROBE...: polls PROBE until it succeeds, the process dies or
# START_TIMEOUT passes.
wait_ready() {
  local name="$1"; shift
  local deadline=$((SECONDS + START_TIMEOUT))
  while true; do
    is_running "${name}" || fail "${name}" "exited during start-up"
    if "$@" >/dev/null 2>&1; then
      log "${name}: ready"
      return 0
    fi
    ((SECONDS < deadline)) || fail "${name}" "not ready after ${START_TIMEOUT}s"
    sleep 0.5
  done
}

# start_component NAME: unless already running, checks its ports, launches it
# and waits until it is ready.
start_component() {
  local name="$1"
  if is_running "${name}"; then
    log "${name}: already running (PID $(pid_of "${name}"))"
    return 0
  fi
  check_ports_free "${name}"
  log "${name}: starting"
  "start_${name//-/_}"
}

# ---------------------------------------------------------------------------
# Certificates (openssl), made once and kept

b64() { base64 -w0 <"$1"; }

new_key() {
  [[ -s "$1" ]] && return 0
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null
  chmod 600 "$1"
}

# make_ca NAME CN
make_ca() {
  local name="$1" cn="$2"
  [[ -s "${CERTS}/${name}.crt" && -s "${CERTS}/${name}.key" ]] && return 0
  log "certs: ${name} (CA ${cn})"
  rm -f "${CERTS}/${name}.crt"
  write_ca "${CERTS}/${name}.key" "${CERTS}/${name}.crt" "${cn}" 3650
}

# make_cert NAME CA CN ORG(-) server|client [SAN...]: a leaf signed by CA;
# remade when missing or when it no longer verifies against CA.
make_cert() {
  local name="$1" ca="$2" cn="$3" org="$4" usage="$5"; shift 5
  local crt="${CERTS}/${name}.crt" key="${CERTS}/${name}.key" cfg san="" eku
  if [[ -s "${crt}" && -s "${key}" ]] &&
    openssl verify -CAfile "${CERTS}/${ca}.crt" "${crt}" >/dev/null 2>&1; then
    return 0
  fi
  log "certs: ${name} (${cn})"
  new_key "${key}"
  case "${usage}" in
    server) eku="serverAuth" ;;
    client) eku="clientAuth" ;;
    peer) eku="serverAuth,clientAuth" ;;
  esac
  local s
  for s in "$@"; do
    if [[ "${s}" =~ ^[0-9.]+$ ]]; then san+="${san:+,}IP:${s}"; else san+="${san:+,}DNS:${s}"; fi
  done
  cfg="$(mktemp)"
  {
    echo "[req]"
    echo "distinguished_name = dn"
    echo "prompt = no"
    echo "[dn]"
    [[ "${org}" != "-" ]] && echo "O = ${org}"
    echo "CN = ${cn}"
    echo "[ext]"
    echo "basicConstraints = critical,CA:FALSE"
    echo "keyUsage = critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage = ${eku}"
    echo "authorityKeyIdentifier = keyid"
    [[ -n "${san}" ]] && echo "subjectAltName = ${san}"
  } >"${cfg}"
  openssl req -new -key "${key}" -config "${cfg}" 2>/dev/null |
    openssl x509 -req -CA "${CERTS}/${ca}.crt" -CAkey "${CERTS}/${ca}.key" \
      -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
      -extfile "${cfg}" -extensions ext -out "${crt}" 2>/dev/null
  rm -f "${cfg}"
}

make_certs() {
  mkdir -p "${CERTS}"
  make_ca ca "sandbox-local-ca"
  make_ca front-proxy-ca "sandbox-local-front-proxy-ca"
  make_cert kube-apiserver ca kube-apiserver - server \
    127.0.0.1 localhost "${SERVICE_IP}" kubernetes kubernetes.default \
    kubernetes.default.svc kubernetes.default.svc.cluster.local
  make_cert front-proxy-client front-proxy-ca front-proxy-client - client
  make_cert admin ca admin system:masters client
  make_cert kube-controller-manager ca system:kube-controller-manager - client
  make_cert kube-scheduler ca system:kube-scheduler - client
  make_cert kwok ca kwok system:masters client
  # kwok serves the kubelet API (exec, attach, logs, port-forward) over TLS;
  # kube-apiserver verifies it with the cluster CA and shows its own client cert.
  make_cert kwok-serving ca kwok-serving - server 127.0.0.1 localhost
  make_cert kube-apiserver-kubelet-client ca kube-apiserver-kubelet-client - client
  make_cert sandbox-apiserver-client ca "${SANDBOX_USER}" - client
  # The aggregator checks the name <service>.<namespace>.svc; kubectl and the
  # probes here use localhost / 127.0.0.1.
  make_cert sandbox-apiserver ca sandbox-apiserver - server \
    localhost 127.0.0.1 sandbox-apiserver.sandbox-system.svc \
    sandbox-apiserver.sandbox-system.svc.cluster.local
  # sandbox-etcd trusts only certificates of its own CA: sandbox-apiserver's
  # client certificate is the one credential that reads or writes sandbox
  # objects there (the cluster's CA signs users, so it must not be trusted).
  make_ca sandbox-etcd-ca "sandbox-local-etcd-ca"
  make_cert sandbox-etcd sandbox-etcd-ca sandbox-etcd - peer 127.0.0.1 localhost
  make_cert sandbox-etcd-client sandbox-etcd-ca sandbox-apiserver - client
  if [[ ! -s "${CERTS}/service-account.key" ]]; then
    log "certs: service-account key pair"
    new_key "${CERTS}/service-account.key"
    rm -f "${CERTS}/service-account.pub"
  fi
  [[ -s "${CERTS}/service-account.pub" ]] ||
    openssl pkey -in "${CERTS}/service-account.key" -pubout -out "${CERTS}/service-account.pub" 2>/dev/null
}

# write_kubeconfig FILE USER CERT: a self-contained kubeconfig (data embedded).
write_kubeconfig() {
  local file="$1" user="$2" cert="$3"
  cat >"${file}.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandbox-local
  cluster:
    server: https://127.0.0.1:${KUBE_APISERVER_PORT}
    certificate-authority-data: $(b64 "${CERTS}/ca.crt")
users:
- name: ${user}
  user:
    client-certificate-data: $(b64 "${CERTS}/${cert}.crt")
    client-key-data: $(b64 "${CERTS}/${cert}.key")
contexts:
- name: sandbox-local
  context:
    cluster: sandbox-local
    user: ${user}
    namespace: default
current-context: sandbox-local
EOF
  chmod 600 "${file}.tmp"
  mv -f "${file}.tmp" "${file}"
}

make_kubeconfigs() {
  mkdir -p "${KUBECONFIGS}"
  write_kubeconfig "${ADMIN_KUBECONFIG}" admin admin
  write_kubeconfig "${KUBECONFIGS}/kube-controller-manager.kubeconfig" system:kube-controller-manager kube-controller-manager
  write_kubeconfig "${KUBECONFIGS}/kube-scheduler.kubeconfig" system:kube-scheduler kube-scheduler
  write_kubeconfig "${KUBECONFIGS}/kwok.kubeconfig" kwok kwok
  write_kubeconfig "${KUBECONFIGS}/sandbox-apiserver.kubeconfig" "${SANDBOX_USER}" sandbox-apiserver-client
}

# ---------------------------------------------------------------------------
# Components

probe_etcd() {
  curl -fsS --max-time 2 "http://127.0.0.1:${ETCD_PORT}/health" | grep -q '"health":"true"'
}

start_etcd() {
  mkdir -p "${DATA}/etcd"
  chmod 700 "${DATA}/etcd"
  launch etcd \
    --name=local \
    --data-dir="${DATA}/etcd" \
    --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" \
    --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster="local=http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster-state=new \
    --log-level=warn
  wait_ready etcd probe_etcd
}

# The Endpoints of the "kubernetes" Service may not hold a loopback address, so
# with --advertise-address=127.0.0.1 the endpoint reconciler is turned off
# (nothing runs in a Pod here that would dial the Service).
probe_kube_apiserver() {
  curl -fsS --max-time 3 --cacert "${CERTS}/ca.crt" \
    --cert "${CERTS}/admin.crt" --key "${CERTS}/admin.key" \
    "https://127.0.0.1:${KUBE_APISERVER_PORT}/readyz" | grep -qx ok
}

# PodNodeSelector and PodTolerationRestriction let a namespace's annotations place all its pods:
# the end-to-end tests of the API and the controllers put theirs on the kwok nodes that way.
start_kube_apiserver() {
  mkdir -p "${DATA}/kube-apiserver"
  launch kube-apiserver \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --secure-port="${KUBE_APISERVER_PORT}" \
    --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
    --cert-dir="${DATA}/kube-apiserver" \
    --tls-cert-file="${CERTS}/kube-apiserver.crt" \
    --tls-private-key-file="${CERTS}/kube-apiserver.key" \
    --client-ca-file="${CERTS}/ca.crt" \
    --authorization-mode=Node,RBAC \
    --enable-admission-plugins=PodNodeSelector,PodTolerationRestriction \
    --allow-privileged=true \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${CERTS}/service-account.pub" \
    --service-account-signing-key-file="${CERTS}/service-account.key" \
    --requestheader-client-ca-file="${CERTS}/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --requestheader-group-headers=X-Remote-Group \
    --requestheader-username-headers=X-Remote-User \
    --proxy-client-cert-file="${CERTS}/front-proxy-client.crt" \
    --proxy-client-key-file="${CERTS}/front-proxy-client.key" \
    --kubelet-certificate-authority="${CERTS}/ca.crt" \
    --kubelet-client-certificate="${CERTS}/kube-apiserver-kubelet-client.crt" \
    --kubelet-client-key="${CERTS}/kube-apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP \
    --enable-aggregator-routing=false \
    --endpoint-reconciler-type=none \
    --profiling="${PROFILING}" \
    --v=1
  wait_ready kube-apiserver probe_kube_apiserver
}

probe_healthz_https() {
  curl -fsSk --max-time 2 "https://127.0.0.1:$1/healthz" | grep -qx ok
}

# The host-path provisioner backs the default StorageClass (artifacts/local/
# storageclass.yaml). Quotas are recounted every 15s instead of 5m, so that
# the usage of a new ResourceQuota of our kinds shows soon after it is made.
start_kube_controller_manager() {
  local kc="${KUBECONFIGS}/kube-controller-manager.kubeconfig"
  launch kube-controller-manager \
    --kubeconfig="${kc}" \
    --authentication-kubeconfig="${kc}" \
    --authorization-kubeconfig="${kc}" \
    --bind-address=127.0.0.1 \
    --secure-port="${KUBE_CONTROLLER_MANAGER_PORT}" \
    --controllers='*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle' \
    --enable-hostpath-provisioner=true \
    --resource-quota-sync-period=15s \
    --root-ca-file="${CERTS}/ca.crt" \
    --service-account-private-key-file="${CERTS}/service-account.key" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file="${CERTS}/ca.crt" \
    --cluster-signing-key-file="${CERTS}/ca.key" \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --leader-elect=false \
    --profiling=false \
    --v=1
  wait_ready kube-controller-manager probe_healthz_https "${KUBE_CONTROLLER_MANAGER_PORT}"
}

start_kube_scheduler() {
  local kc="${KUBECONFIGS}/kube-scheduler.kubeconfig"
  launch kube-scheduler \
    --kubeconfig="${kc}" \
    --authentication-kubeconfig="${kc}" \
    --authorization-kubeconfig="${kc}" \
    --bind-address=127.0.0.1 \
    --secure-port="${KUBE_SCHEDULER_PORT}" \
    --leader-elect=false \
    --profiling=false \
    --v=1
  wait_ready kube-scheduler probe_healthz_https "${KUBE_SCHEDULER_PORT}"
}

probe_kwok() {
  curl -fsS --max-time 2 --cacert "${CERTS}/ca.crt" "https://127.0.0.1:${KWOK_PORT}/healthz" >/dev/null
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

start_kwok() {
  local stage args=()
  for stage in node-initialize node-heartbeat-with-lease pod-ready pod-complete pod-delete; do
    args+=("--config=${KWOK_STAGES}/${stage}.yaml")
  done
  write_kwok_streams "${OUT}/kwok/streams.yaml"
  # --node-ip keeps every address kwok reports for its Nodes on loopback, so
  # nothing (kubectl logs/exec through the kube-apiserver) ever dials out.
  # The Nodes advertise KWOK_PORT as their kubelet port (--node-port): kwok
  # serves its health checks, metrics and the kubelet API there, over TLS.
  launch kwok \
    "${args[@]}" \
    --config="${OUT}/kwok/streams.yaml" \
    --kubeconfig="${KUBECONFIGS}/kwok.kubeconfig" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.1 \
    --node-port="${KWOK_PORT}" \
    --tls-cert-file="${CERTS}/kwok-serving.crt" \
    --tls-private-key-file="${CERTS}/kwok-serving.key" \
    --cidr=10.244.0.0/16 \
    --server-address="127.0.0.1:${KWOK_PORT}"
  wait_ready kwok probe_kwok
}

probe_sandbox_etcd() {
  curl -fsS --max-time 2 --cacert "${CERTS}/sandbox-etcd-ca.crt" \
    --cert "${CERTS}/sandbox-etcd-client.crt" --key "${CERTS}/sandbox-etcd-client.key" \
    "https://127.0.0.1:${SANDBOX_ETCD_PORT}/health" | grep -q '"health":"true"'
}

# sandbox-etcd holds the sandbox objects only, so it can be stopped and started
# on its own. Its data directory is the one the embedded etcd of earlier
# versions used; etcd keeps a single-member cluster's data across such a move.
# History is compacted like the embedded etcd did (periodic, 5m). Clients and
# peers speak TLS and must show a certificate of sandbox-etcd-ca (see
# make_certs): no other local process can read or write sandbox objects.
start_sandbox_etcd() {
  mkdir -p "${DATA}/sandbox-etcd"
  chmod 700 "${DATA}/sandbox-etcd"
  launch sandbox-etcd \
    --name=sandbox-etcd \
    --data-dir="${DATA}/sandbox-etcd" \
    --listen-client-urls="https://127.0.0.1:${SANDBOX_ETCD_PORT}" \
    --advertise-client-urls="https://127.0.0.1:${SANDBOX_ETCD_PORT}" \
    --listen-peer-urls="https://127.0.0.1:${SANDBOX_ETCD_PEER_PORT}" \
    --initial-advertise-peer-urls="https://127.0.0.1:${SANDBOX_ETCD_PEER_PORT}" \
    --initial-cluster="sandbox-etcd=https://127.0.0.1:${SANDBOX_ETCD_PEER_PORT}" \
    --initial-cluster-state=new \
    --cert-file="${CERTS}/sandbox-etcd.crt" \
    --key-file="${CERTS}/sandbox-etcd.key" \
    --trusted-ca-file="${CERTS}/sandbox-etcd-ca.crt" \
    --client-cert-auth=true \
    --peer-cert-file="${CERTS}/sandbox-etcd.crt" \
    --peer-key-file="${CERTS}/sandbox-etcd.key" \
    --peer-trusted-ca-file="${CERTS}/sandbox-etcd-ca.crt" \
    --peer-client-cert-auth=true \
    --auto-compaction-mode=periodic \
    --auto-compaction-retention=5m \
    --log-level=warn
  wait_ready sandbox-etcd probe_sandbox_etcd
}

probe_sandbox_apiserver() {
  curl -fsS --max-time 3 --cacert "${CERTS}/ca.crt" \
    "https://127.0.0.1:${SANDBOX_APISERVER_PORT}/readyz" | grep -qx ok
}

# --proxy-allow-host-network-pods: kwok's pods report the node address, 127.0.0.1, as
# a hostNetwork pod would, so sandboxes/proxy reaches them only with it (tests run
# the sandbox's "process" on 127.0.0.1).
start_sandbox_apiserver() {
  local kc="${KUBECONFIGS}/sandbox-apiserver.kubeconfig" extra=()
  # --- E2B endpoint (issue 41; docs/e2b.md) ---------------------------------
  # Plain HTTP on 127.0.0.1:E2B_PORT [3049], keys in sandbox-system (the Role in
  # artifacts/local/rbac.yaml). hack/e2b-env.sh (make run) makes a demo key.
  local e2b=(--e2b-bind-address="127.0.0.1:${E2B_PORT:-3049}" --e2b-plain-http --e2b-api-keys-namespace=sandbox-system)
  # ---------------------------------------------------------------------------
  # shellcheck disable=SC2206 # word splitting of the extra flags is intended
  [[ -n "${SANDBOX_APISERVER_ARGS}" ]] && extra=(${SANDBOX_APISERVER_ARGS})
  launch sandbox-apiserver \
    --secure-port="${SANDBOX_APISERVER_PORT}" \
    --bind-address=127.0.0.1 \
    --tls-cert-file="${CERTS}/sandbox-apiserver.crt" \
    --tls-private-key-file="${CERTS}/sandbox-apiserver.key" \
    --kubeconfig="${kc}" \
    --authentication-kubeconfig="${kc}" \
    --authorization-kubeconfig="${kc}" \
    --etcd-servers="https://127.0.0.1:${SANDBOX_ETCD_PORT}" \
    --etcd-cafile="${CERTS}/sandbox-etcd-ca.crt" \
    --etcd-certfile="${CERTS}/sandbox-etcd-client.crt" \
    --etcd-keyfile="${CERTS}/sandbox-etcd-client.key" \
    --proxy-allow-host-network-pods \
    "${e2b[@]}" \
    "${extra[@]}"
  wait_ready sandbox-apiserver probe_sandbox_apiserver
}

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
      "${f}" >"${MANIFESTS}/$(basename "${f}")"
  done
  log "applying artifacts/local"
  # Namespace first, the APIServices last (after the Service they point at).
  local ordered=("${MANIFESTS}/namespace.yaml")
  for f in "${MANIFESTS}"/*.yaml; do
    [[ "${f}" == */namespace.yaml || "${f}" == */apiservices.yaml ]] || ordered+=("${f}")
  done
  ordered+=("${MANIFESTS}/apiservices.yaml")
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
      sed 's/^/    /' <<<"${missing}" >&2
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
  make_certs
  make_kubeconfigs
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
    is_running "${name}" || check_ports_free "${name}"
  done
  if [[ -z "${SKIP_SANDBOX_APISERVER}" ]] && ! sandbox_binary_present; then
    exit 1
  fi

  start_component etcd
  start_component kube-apiserver
  apply_local_manifests
  start_component kube-controller-manager
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
    [[ "${COMPONENTS[i]}" == containerd ]] && node_touched && node_cleanup
  done
  # A killed process may take a moment to release its sockets.
  local name port left=0 i
  for name in "${COMPONENTS[@]}"; do
    for port in $(component_ports "${name}"); do
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
  local name pid state rc=0
  for name in "${COMPONENTS[@]}"; do
    if [[ "${NODE_COMPONENTS}" == *" ${name} "* ]] && ! node_touched; then
      printf '%-24s %s\n' "${name}" "not run (no real node: LOCAL_NODE=${LOCAL_NODE})"
      continue
    fi
    if is_running "${name}"; then
      state="running (PID $(pid_of "${name}"))"
    elif pid="$(pid_of "${name}")"; then
      state="not running (exited; PID file left from ${pid}, see ${LOGS#"${ROOT}/"}/${name}.log)"
      rc=1
    else
      state="stopped"
      rc=1
    fi
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
cmd_kill_sandbox_apiserver() {
  local pid i
  if ! is_running sandbox-apiserver; then
    log "sandbox-apiserver: not running"
    rm -f "${PIDS}/sandbox-apiserver.pid"
    return 0
  fi
  pid="$(pid_of sandbox-apiserver)"
  log "sandbox-apiserver: sending SIGKILL (PID ${pid})"
  kill -KILL "${pid}" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    pid_alive "${pid}" || break
    sleep 0.1
  done
  pid_alive "${pid}" && die "sandbox-apiserver: PID ${pid} survived SIGKILL"
  rm -f "${PIDS}/sandbox-apiserver.pid"
  log "sandbox-apiserver: killed"
}

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
