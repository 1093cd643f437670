#!/usr/bin/env bash
# Local control plane: etcd, kube-apiserver, kube-controller-manager,
# local-path-provisioner (the volumes), kube-scheduler, kwok (fake Nodes that run
# Pods), a real node (containerd and kubelet, with kube-proxy, kube-router's
# NetworkPolicy firewall, CoreDNS and socat for the kubernetes Service: see
# docs/local-plane.md) when run as root on Linux, sandbox-etcd (the etcd of
# sandbox-apiserver alone) and sandbox-apiserver behind the aggregator, all as
# background processes on 127.0.0.1 (kubelet on its bridge's address). They
# start in this order and stop in the reverse one; stop also undoes what the
# real node did to the host and removes the plane's volumes.
#
# This script builds the Go program that runs the plane, hack/localplane, into
# _output/bin/local-plane and execs it with the same command. What each component
# runs (binary, flags, ports, readiness check, log) is one table,
# hack/localplane/plane/components.go; the start order, with what each step
# writes before a component starts and the cluster objects it makes after, is
# one list, startOrder in hack/localplane/plane/start.go.
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
#   KWOK_PORT [10247] (kwok-guard, on KWOK_NODE_IP) KWOK_BACKEND_PORT [10246] (kwok)
#   SANDBOX_ETCD_PORT [2381] SANDBOX_ETCD_PEER_PORT [2382]
#   SANDBOX_APISERVER_PORT [8443] E2B_PORT [3049] (sandbox-apiserver's E2B endpoint)
#   SANDBOX_APISERVER_BIN [_output/bin/sandbox-apiserver]
#   SANDBOX_APISERVER_ARGS    extra flags for sandbox-apiserver (word-split)
#   SKIP_SANDBOX_APISERVER=1  start everything but sandbox-apiserver (sandbox-etcd
#                             runs, for a server started by hand)
#   SANDBOX_APISERVER_MODE [host]  chart: instead of sandbox-etcd and sandbox-apiserver
#                             as processes here, helm installs the chart on the real
#                             node with the images of _output/images (make run-chart,
#                             hack/localplane/plane/chart.go); stop uninstalls it
#   CHART_TIMEOUT [600]       seconds the chart has to roll out, then to be served
#   KWOK_NODES [3]            number of fake Nodes
#   SANDBOX_WORK_DIR [_output/local/sandbox-work]  where kwok runs the commands of
#                             exec on any pod, and the file its logs and attach
#                             stream (container.log)
#   KWOK_EXEC_UID [65534]     as root, the unprivileged user and group kwok runs
#                             those commands as (it owns SANDBOX_WORK_DIR)
#   KWOK_NODE_IP [10.89.0.1 as root on Linux, else 127.0.0.1]  the address of
#                             kwok's Nodes and their host-network pods, on the
#                             interface sandbox-kwok0 (stop deletes it); the one
#                             place sandbox-apiserver reaches host-network pods
#   PORT_FORWARD_PORTS [18000-18099]  a pod's port P in this range forwards to
#                             KWOK_NODE_IP:P (kwok's ClusterPortForward)
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
#   KUBE_PROXY_HEALTHZ_PORT [10256] KUBE_PROXY_METRICS_PORT [10249]
#   COREDNS_READY_PORT [8181]  the node's network components' own ports
#                             (127.0.0.1)
#   NODE_POD_PIDS_LIMIT [1024]  the most processes one pod of the real node may have
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/lib/common.sh"

# usage prints the comment block at the top of this file.
usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}" >&2
  exit 2
}

case "${1:-}" in
  start | stop | status | restart | \
    start-sandbox-apiserver | stop-sandbox-apiserver | restart-sandbox-apiserver | kill-sandbox-apiserver | \
    start-sandbox-etcd | stop-sandbox-etcd | restart-kube-apiserver | restart-kubelet | restart-containerd) ;;
  *) usage ;;
esac

local_plane_build
exec "${ROOT}/_output/bin/local-plane" -root "${ROOT}" "$1"
