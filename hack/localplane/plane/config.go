// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package plane runs the local control plane (hack/local-up.sh, through the local-plane command):
// its typed configuration (config.go), its table of components (components.go: what each runs,
// its flags, ports, readiness check and log), the running of one component (process.go: start
// until ready, stop, kill, status), the start order and the commands (start.go), the cluster
// objects it makes (cluster.go, kwok.go, aggregation.go), the real node (node.go, nodeconfig.go,
// hostchanges.go: what it does to the host, recorded by package hostchange) and the
// certificates and kubeconfigs (credentials.go, made by package certs).
package plane

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Config is the plane's configuration: the environment knobs of hack/local-up.sh (listed in its
// header and docs/local-plane.md), with the same defaults.
type Config struct {
	// Root is the checkout; Out its _output/local.
	Root, Out string

	EtcdPort, EtcdPeerPort    int
	KubeAPIServerPort         int
	KubeControllerManagerPort int
	KubeSchedulerPort         int
	KwokPort                  int
	// KwokBackendPort is kwok's own server, on loopback, behind kwok-guard at KwokPort.
	KwokBackendPort                      int
	SandboxEtcdPort, SandboxEtcdPeerPort int
	SandboxAPIServerPort                 int
	KubeletPort, KubeletHealthzPort      int
	// The real node's network components' own ports, on 127.0.0.1 (network.go).
	KubeProxyHealthzPort, KubeProxyMetricsPort int
	CoreDNSReadyPort                           int
	// E2BPort is sandbox-apiserver's E2B endpoint (docs/e2b.md), plain HTTP on 127.0.0.1.
	E2BPort int

	// SandboxAPIServerBin is the server's binary; SandboxAPIServerArgs extra flags for it.
	SandboxAPIServerBin  string
	SandboxAPIServerArgs []string
	// Profiling serves kube-apiserver's /debug/pprof.
	Profiling bool

	NodeName string
	// NodePodCIDR holds the real node's pods; its first address is the node's, on NodeBridge.
	NodePodCIDR netip.Prefix
	NodeBridge  string
	// CNIBinDir holds the CNI plugins (Debian's).
	CNIBinDir string

	// LocalNode says whether start runs the real node: NodeAuto when it can (root on Linux, its
	// binaries built), NodeOn insists, NodeOff never.
	LocalNode NodeMode

	// KwokNodes is the number of kwok's fake Nodes.
	KwokNodes int
	// SandboxWorkDir is where kwok runs the commands of exec on any pod; its container.log is
	// what logs and attach stream.
	SandboxWorkDir string
	// PortForwardFirst..PortForwardLast: a pod's port P in that range forwards to KwokNodeIP:P.
	PortForwardFirst, PortForwardLast int
	// SkipSandboxAPIServer starts everything but sandbox-apiserver (a server started by hand).
	SkipSandboxAPIServer bool
	// Mode says where sandbox-apiserver runs: ModeHost (its process and sandbox-etcd on this
	// machine) or ModeChart (installed by its Helm chart on the real node, chart.go).
	Mode string
	// ChartTimeout bounds the chart's install (its rollout) and again the wait until it serves.
	ChartTimeout time.Duration

	// KwokNodeIP is the address kwok's Nodes report, and with it their host-network pods; kwok
	// serves its kubelet API there. As root on Linux it is an address of its own, on the
	// interface KwokInterface, so sandbox-apiserver may reach kwok's pods (the tests' servers
	// listen there) without reaching the machine's loopback; otherwise it is 127.0.0.1, and
	// kwok's pods are not reached.
	KwokNodeIP netip.Addr

	// PodPidsLimit is the most processes (threads included) one pod of the real node may have.
	PodPidsLimit int
	// KwokExecUID is the user and group kwok runs exec's commands as when the plane runs as root.
	KwokExecUID int

	StartTimeout, StopTimeout time.Duration
	// APIServiceTimeout bounds the wait for the APIServices to be Available, and again for
	// kube-apiserver to serve their OpenAPI.
	APIServiceTimeout time.Duration
}

// The values of SANDBOX_APISERVER_MODE.
const (
	ModeHost  = "host"
	ModeChart = "chart"
)

// NodeMode is the LOCAL_NODE knob.
type NodeMode string

const (
	NodeAuto NodeMode = "auto"
	NodeOn   NodeMode = "true"
	NodeOff  NodeMode = "false"
)

// ConfigFromEnv reads the configuration of the checkout root from the environment.
func ConfigFromEnv(root string) (Config, error) {
	c := Config{Root: root, Out: filepath.Join(root, "_output/local")}
	var errs []string
	port := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			errs = append(errs, fmt.Sprintf("%s: %q is not a TCP port", name, v))
		}
		return p
	}
	seconds := func(name string, def int) time.Duration {
		v := os.Getenv(name)
		if v == "" {
			return time.Duration(def) * time.Second
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Sprintf("%s: %q is not a number of seconds", name, v))
		}
		return time.Duration(n) * time.Second
	}
	c.EtcdPort = port("ETCD_PORT", 2379)
	c.EtcdPeerPort = port("ETCD_PEER_PORT", 2380)
	c.KubeAPIServerPort = port("KUBE_APISERVER_PORT", 6443)
	c.KubeControllerManagerPort = port("KUBE_CONTROLLER_MANAGER_PORT", 10257)
	c.KubeSchedulerPort = port("KUBE_SCHEDULER_PORT", 10259)
	c.KwokPort = port("KWOK_PORT", 10247)
	c.KwokBackendPort = port("KWOK_BACKEND_PORT", 10246)
	c.SandboxEtcdPort = port("SANDBOX_ETCD_PORT", 2381)
	c.SandboxEtcdPeerPort = port("SANDBOX_ETCD_PEER_PORT", 2382)
	c.SandboxAPIServerPort = port("SANDBOX_APISERVER_PORT", 8443)
	c.E2BPort = port("E2B_PORT", 3049)
	c.KubeletPort = port("KUBELET_PORT", 10250)
	c.KubeletHealthzPort = port("KUBELET_HEALTHZ_PORT", 10248)
	c.KubeProxyHealthzPort = port("KUBE_PROXY_HEALTHZ_PORT", 10256)
	c.KubeProxyMetricsPort = port("KUBE_PROXY_METRICS_PORT", 10249)
	c.CoreDNSReadyPort = port("COREDNS_READY_PORT", 8181)
	c.SandboxAPIServerBin = envOr("SANDBOX_APISERVER_BIN", filepath.Join(root, "_output/bin/sandbox-apiserver"))
	c.SandboxAPIServerArgs = strings.Fields(os.Getenv("SANDBOX_APISERVER_ARGS"))
	switch v := envOr("PROFILING", "false"); v {
	case "true", "false":
		c.Profiling = v == "true"
	default:
		errs = append(errs, fmt.Sprintf("PROFILING: %q is not true or false", v))
	}
	c.NodeName = envOr("NODE_NAME", "local-node")
	c.NodeBridge = envOr("NODE_BRIDGE", "sandbox0")
	c.CNIBinDir = envOr("CNI_BIN_DIR", "/usr/lib/cni")
	cidr := envOr("NODE_POD_CIDR", "10.88.0.0/24")
	if p, err := netip.ParsePrefix(cidr); err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		errs = append(errs, fmt.Sprintf("NODE_POD_CIDR: %q is not an IPv4 CIDR of at least four addresses", cidr))
	} else {
		c.NodePodCIDR = p.Masked()
	}
	defaultKwokIP := "127.0.0.1"
	if runtime.GOOS == "linux" && os.Geteuid() == 0 {
		defaultKwokIP = "10.89.0.1"
	}
	kwokIP := envOr("KWOK_NODE_IP", defaultKwokIP)
	if a, err := netip.ParseAddr(kwokIP); err != nil || !a.Is4() || a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalUnicast() {
		errs = append(errs, fmt.Sprintf("KWOK_NODE_IP: %q is not a unicast IPv4 address", kwokIP))
	} else if c.NodePodCIDR.Contains(a) {
		errs = append(errs, fmt.Sprintf("KWOK_NODE_IP: %s is in NODE_POD_CIDR %s", a, c.NodePodCIDR))
	} else {
		c.KwokNodeIP = a
	}
	// atLeast reads a whole number of at least least.
	atLeast := func(name string, def, least int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < least {
			errs = append(errs, fmt.Sprintf("%s: %q is not a whole number of at least %d", name, v, least))
		}
		return n
	}
	c.KwokExecUID = atLeast("KWOK_EXEC_UID", 65534, 1)
	c.PodPidsLimit = atLeast("NODE_POD_PIDS_LIMIT", 1024, 64)
	c.StartTimeout = seconds("START_TIMEOUT", 90)
	c.StopTimeout = seconds("STOP_TIMEOUT", 20)
	c.APIServiceTimeout = seconds("APISERVICE_TIMEOUT", 120)
	switch v := NodeMode(envOr("LOCAL_NODE", "auto")); v {
	case NodeAuto, NodeOn, NodeOff:
		c.LocalNode = v
	default:
		errs = append(errs, fmt.Sprintf("LOCAL_NODE: %q is not auto, true or false", v))
	}
	nodes := envOr("KWOK_NODES", "3")
	if n, err := strconv.Atoi(nodes); err != nil || n < 0 || n > 1000 {
		errs = append(errs, fmt.Sprintf("KWOK_NODES: %q is not a number of Nodes from 0 to 1000", nodes))
	} else {
		c.KwokNodes = n
	}
	c.SandboxWorkDir = envOr("SANDBOX_WORK_DIR", filepath.Join(c.Out, "sandbox-work"))
	forwards := envOr("PORT_FORWARD_PORTS", "18000-18099")
	first, last, ok := strings.Cut(forwards, "-")
	f, err1 := strconv.Atoi(first)
	l, err2 := strconv.Atoi(last)
	if !ok || err1 != nil || err2 != nil || f < 1 || l > 65535 || f > l {
		errs = append(errs, fmt.Sprintf("PORT_FORWARD_PORTS: %q is not FIRST-LAST, two TCP ports", forwards))
	} else {
		c.PortForwardFirst, c.PortForwardLast = f, l
	}
	c.SkipSandboxAPIServer = os.Getenv("SKIP_SANDBOX_APISERVER") != ""
	switch c.Mode = envOr("SANDBOX_APISERVER_MODE", ModeHost); c.Mode {
	case ModeHost, ModeChart:
	default:
		errs = append(errs, fmt.Sprintf("SANDBOX_APISERVER_MODE: %q is not %s or %s", c.Mode, ModeHost, ModeChart))
	}
	c.ChartTimeout = seconds("CHART_TIMEOUT", 600)
	if len(errs) > 0 {
		return c, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return c, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// The plane's directories and files under Out.
func (c Config) Logs() string        { return filepath.Join(c.Out, "logs") }
func (c Config) Pids() string        { return filepath.Join(c.Out, "pids") }
func (c Config) Data() string        { return filepath.Join(c.Out, "data") }
func (c Config) Certs() string       { return filepath.Join(c.Out, "certs") }
func (c Config) Kubeconfigs() string { return filepath.Join(c.Out, "kubeconfigs") }
func (c Config) NodeDir() string     { return filepath.Join(c.Out, "node") }
func (c Config) ToolsBin() string    { return filepath.Join(c.Root, "_output/tools/bin") }
func (c Config) Tool(name string) string {
	return filepath.Join(c.ToolsBin(), name)
}
func (c Config) Cert(name string) string { return filepath.Join(c.Certs(), name) }
func (c Config) Kubeconfig(name string) string {
	return filepath.Join(c.Kubeconfigs(), name+".kubeconfig")
}
func (c Config) ContainerdSock() string { return filepath.Join(c.NodeDir(), "run/containerd.sock") }

// NodeIP is the real node's address: the pod CIDR's first, on the bridge.
func (c Config) NodeIP() string { return c.NodePodCIDR.Addr().Next().String() }

// KwokInterface is the interface (a bridge without ports) that holds KwokNodeIP when it is not loopback.
const KwokInterface = "sandbox-kwok0"

// KwokOwnAddress: kwok's Nodes have an address of their own (on KwokInterface), not loopback.
func (c Config) KwokOwnAddress() bool { return !c.KwokNodeIP.IsLoopback() }

// LocalPlaneBin is the local-plane command (hack/local-up.sh builds it), which also runs
// kwok-guard.
func (c Config) LocalPlaneBin() string { return filepath.Join(c.Root, "_output/bin/local-plane") }
