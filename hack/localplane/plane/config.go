// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package plane is the local control plane's typed configuration, its table of components
// (components.go: what each runs, its flags, ports, readiness check and log) and the running of
// one component: start (after checking its ports) until it is ready, stop (SIGTERM, then
// SIGKILL), kill, status. hack/local-up.sh calls it through the local-plane command for every
// component, in order, and does the rest (certificates, the cluster's objects, the real node's
// configuration).
package plane

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the plane's configuration: the environment knobs of hack/local-up.sh (listed in its
// header and docs/local-plane.md), with the same defaults.
type Config struct {
	// Root is the checkout; Out its _output/local.
	Root, Out string

	EtcdPort, EtcdPeerPort               int
	KubeAPIServerPort                    int
	KubeControllerManagerPort            int
	KubeSchedulerPort                    int
	KwokPort                             int
	SandboxEtcdPort, SandboxEtcdPeerPort int
	SandboxAPIServerPort                 int
	KubeletPort, KubeletHealthzPort      int
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

	StartTimeout, StopTimeout time.Duration
}

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
	c.SandboxEtcdPort = port("SANDBOX_ETCD_PORT", 2381)
	c.SandboxEtcdPeerPort = port("SANDBOX_ETCD_PEER_PORT", 2382)
	c.SandboxAPIServerPort = port("SANDBOX_APISERVER_PORT", 8443)
	c.E2BPort = port("E2B_PORT", 3049)
	c.KubeletPort = port("KUBELET_PORT", 10250)
	c.KubeletHealthzPort = port("KUBELET_HEALTHZ_PORT", 10248)
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
	c.StartTimeout = seconds("START_TIMEOUT", 90)
	c.StopTimeout = seconds("STOP_TIMEOUT", 20)
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

// Shell is the configuration the scripts read, as shell assignments (NAME='value'), for
// hack/local-up.sh to source: the knobs' defaults live here alone.
func (c Config) Shell() string {
	vars := []struct{ name, value string }{
		{"KUBE_APISERVER_PORT", strconv.Itoa(c.KubeAPIServerPort)},
		{"KWOK_PORT", strconv.Itoa(c.KwokPort)},
		{"SANDBOX_APISERVER_PORT", strconv.Itoa(c.SandboxAPIServerPort)},
		{"E2B_PORT", strconv.Itoa(c.E2BPort)},
		{"SANDBOX_APISERVER_BIN", c.SandboxAPIServerBin},
		{"KUBELET_PORT", strconv.Itoa(c.KubeletPort)},
		{"KUBELET_HEALTHZ_PORT", strconv.Itoa(c.KubeletHealthzPort)},
		{"NODE_NAME", c.NodeName},
		{"NODE_POD_CIDR", c.NodePodCIDR.String()},
		{"NODE_BRIDGE", c.NodeBridge},
		{"NODE_IP", c.NodeIP()},
		{"CNI_BIN_DIR", c.CNIBinDir},
		{"START_TIMEOUT", strconv.Itoa(int(c.StartTimeout.Seconds()))},
	}
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "%s='%s'\n", v.name, strings.ReplaceAll(v.value, "'", `'\''`))
	}
	return b.String()
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
