// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// The real node's network: kube-proxy (iptables mode) routes the Services' cluster IPs,
// kube-router's firewall alone enforces NetworkPolicies (iptables and ipset), CoreDNS answers for
// the cluster domain on the node's address, and socat carries the kubernetes Service's
// connections from the node's address to kube-apiserver, which listens on loopback only. All of
// them are host processes of the real node: nothing of theirs listens beyond loopback and the
// node's address (docs/local-plane.md).

// ClusterDNSIP is the kube-dns Service's cluster IP, kubelet's clusterDNS.
const ClusterDNSIP = "10.0.0.10"

// ClusterDomain is the cluster's DNS domain.
const ClusterDomain = "cluster.local"

// socatBinary carries the kubernetes Service's connections (Debian's socat).
const socatBinary = "/usr/bin/socat"

// withNetwork inserts the real node's network components into the table right after kubelet:
// they need the Node it registers (its address and pod CIDR), and start before sandbox-apiserver
// makes any sandbox, so that no sandbox runs before its NetworkPolicy is enforced.
func (c Config) withNetwork(components []Component) []Component {
	i := slices.IndexFunc(components, func(comp Component) bool { return comp.Name == "kubelet" })
	return slices.Insert(components, i+1, c.networkComponents()...)
}

// networkComponents are the real node's network components, in start order.
func (c Config) networkComponents() []Component {
	local := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	return []Component{{
		// Its flags are in its configuration file (nodeconfig.go): the cluster CIDR, NodePorts on
		// the node's address alone, no NodePorts on loopback (which would need route_localnet),
		// and the conntrack sysctls left as they are.
		Name:   "kube-proxy",
		Binary: c.Tool("kube-proxy"),
		Args:   []string{"--config=" + filepath.Join(c.NodeDir(), "kube-proxy.yaml"), "--v=1"},
		Ports:  []int{c.KubeProxyHealthzPort, c.KubeProxyMetricsPort},
		// 200 once its first sync of the Services' rules is done.
		Ready: Probe{URL: "http://" + local(c.KubeProxyHealthzPort) + "/healthz"},
		Node:  true,
	}, {
		// The NetworkPolicy firewall alone: no routing (its BGP server would listen on the node's
		// address), no Service proxy (kube-proxy is), no health or metrics server (they would
		// listen on every address). It logs each sync of the policies' rules at -v=1.
		Name:   "kube-router",
		Binary: c.Tool("kube-router"),
		Args: []string{
			"--run-firewall=true",
			"--run-router=false",
			"--run-service-proxy=false",
			"--enable-cni=false",
			"--enable-ipv6=false",
			"--kubeconfig=" + c.Kubeconfig("kube-router"),
			"--hostname-override=" + c.NodeName,
			"--service-cluster-ip-range=" + serviceCIDR,
			"--health-port=0",
			"--metrics-port=0",
			"--v=1",
		},
		Ready: Probe{LogLine: "sync iptables took"},
		Node:  true,
	}, {
		Name:   "coredns",
		Binary: c.Tool("coredns"),
		Args:   []string{"-conf", filepath.Join(c.NodeDir(), "coredns/Corefile")},
		Ports:  []int{c.CoreDNSReadyPort},
		// 200 once the kubernetes plugin has synced its caches.
		Ready: Probe{URL: "http://" + local(c.CoreDNSReadyPort) + "/ready"},
		Node:  true,
	}, {
		// The kubernetes Service's endpoint (clusterObjects) is the node's address at
		// kube-apiserver's port: socat forwards each connection there to kube-apiserver on
		// loopback. Its readiness is kube-apiserver's, reached through it (the serving
		// certificate does not name the node's address).
		Name:   "kubernetes-service",
		Binary: socatBinary,
		Args: []string{
			"TCP-LISTEN:" + strconv.Itoa(c.KubeAPIServerPort) + ",bind=" + c.NodeIP() + ",reuseaddr,fork",
			"TCP:" + local(c.KubeAPIServerPort),
		},
		Ready: Probe{URL: "https://" + c.NodeIP() + ":" + strconv.Itoa(c.KubeAPIServerPort) + "/readyz", Insecure: true,
			Cert: c.Cert("admin.crt"), Key: c.Cert("admin.key"), Body: "ok"},
		Node: true,
	}}
}

// networkMissing lists what the network components need and the machine lacks: their binaries
// in _output/tools/bin, and Debian's socat and ipset (hack/build-tools.sh installs them).
func (c Config) networkMissing() []string {
	var missing []string
	for _, t := range []string{"kube-proxy", "kube-router", "coredns"} {
		if !executable(c.Tool(t)) {
			missing = append(missing, t)
		}
	}
	if !executable(socatBinary) {
		missing = append(missing, "socat")
	}
	if _, err := exec.LookPath("ipset"); err != nil {
		missing = append(missing, "ipset")
	}
	return missing
}

// prepareNetwork makes the cluster objects of the node's network before its first component
// starts (clusterObjects).
func (p *Plane) prepareNetwork(ctx context.Context) error {
	objects, err := p.Config.clusterObjects()
	if err != nil {
		return err
	}
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	err = cl.applyAll(ctx, objects)
	return err
}

// unpolicedChain holds the rules that drop the traffic of the pods kube-router has not taken yet.
// Its KUBE- prefix puts it in the node's iptables records (hostchanges.go): stop deletes it and the
// rules that jump to it.
const unpolicedChain = "KUBE-LOCAL-UNPOLICED"

// guardUnpolicedPods makes unpolicedChain and jumps to it from the end of INPUT and FORWARD, before
// kube-router starts. kube-router keeps its own jumps at the top of those chains and accepts or
// rejects there all the traffic from and to every pod it has synced; what reaches the end from
// or to the pods' addresses is a pod's it has not synced yet, which is dropped (but for answers on
// connections let through): a new pod's traffic waits for its policies instead of passing
// unfiltered.
func (c Config) guardUnpolicedPods(ctx context.Context) error {
	iptables := func(args ...string) error {
		out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	if iptables("-n", "-L", unpolicedChain) != nil {
		if err := iptables("-N", unpolicedChain); err != nil {
			return err
		}
	}
	cidr := c.NodePodCIDR.String()
	comment := []string{"-m", "comment", "--comment", "local-plane: a pod kube-router has not synced yet"}
	for _, args := range [][]string{
		{"-F", unpolicedChain},
		// Answers on connections that were let through (kubelet's probes of the pod), and the
		// node's own traffic: its address is in the pods' range.
		{"-A", unpolicedChain, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "RETURN"},
		{"-A", unpolicedChain, "-m", "addrtype", "--src-type", "LOCAL", "-j", "RETURN"},
		append(append([]string{"-A", unpolicedChain, "-s", cidr}, comment...), "-j", "DROP"),
		append(append([]string{"-A", unpolicedChain, "-d", cidr}, comment...), "-j", "DROP"),
	} {
		if err := iptables(args...); err != nil {
			return err
		}
	}
	for _, builtin := range []string{"INPUT", "FORWARD"} {
		if iptables("-C", builtin, "-j", unpolicedChain) != nil {
			if err := iptables("-A", builtin, "-j", unpolicedChain); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterObjects is the YAML of the cluster objects the network components need: the roles of
// CoreDNS and kube-router, kube-proxy's binding, the kube-dns Service, and the EndpointSlices
// that point kube-dns and kubernetes at the node's address (neither has pods to select: CoreDNS
// and kube-apiserver are host processes).
func (c Config) clusterObjects() ([]byte, error) {
	var b bytes.Buffer
	err := clusterObjectsTemplate.Execute(&b, c)
	return b.Bytes(), err
}

var clusterObjectsTemplate = template.Must(template.New("network").Parse(`# Written by hack/localplane: the real node's Services, DNS and NetworkPolicy engine.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: local-plane:kube-proxy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:node-proxier}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: system:kube-proxy}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: local-plane:coredns}
rules:
- {apiGroups: [""], resources: [services, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: local-plane:coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: local-plane:coredns}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: system:coredns}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: local-plane:kube-router}
rules:
- {apiGroups: [""], resources: [namespaces, pods, services, endpoints, nodes], verbs: [get, list, watch]}
- {apiGroups: [networking.k8s.io], resources: [networkpolicies], verbs: [get, list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: local-plane:kube-router}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: local-plane:kube-router}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: system:kube-router}]
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
spec:
  clusterIP: {{.ClusterDNSIP}}
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-local-node
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: local-plane}
addressType: IPv4
endpoints: [{addresses: ["{{.NodeIP}}"], conditions: {ready: true}, nodeName: {{.NodeName}}}]
ports:
- {name: dns, port: 53, protocol: UDP}
- {name: dns-tcp, port: 53, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes-local-node
  namespace: default
  labels: {kubernetes.io/service-name: kubernetes, endpointslice.kubernetes.io/managed-by: local-plane}
addressType: IPv4
endpoints: [{addresses: ["{{.NodeIP}}"], conditions: {ready: true}}]
ports:
- {name: https, port: {{.KubeAPIServerPort}}, protocol: TCP}
`))

// kubeProxyConfig: iptables mode; oomScoreAdj 0 as kubelet's (no CAP_SYS_RESOURCE here).
const kubeProxyConfig = `# Written by hack/localplane: the local plane's real node.
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{.Kubeconfig "kube-proxy"}}
hostnameOverride: {{.NodeName}}
mode: iptables
clusterCIDR: {{.NodePodCIDR}}
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:{{.KubeProxyHealthzPort}}
metricsBindAddress: 127.0.0.1:{{.KubeProxyMetricsPort}}
nodePortAddresses: ["{{.NodeIP}}/32"]
iptables:
  localhostNodePorts: false
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// corefile: the cluster domain from the Kubernetes API (as CoreDNS reads it with its own
// kubeconfig), other names forwarded to the machine's resolvers; it serves on the node's address
// alone, its readiness on loopback.
const corefile = `# Written by hack/localplane: the local plane's real node.
.:53 {
    bind {{.NodeIP}}
    errors
    ready 127.0.0.1:{{.CoreDNSReadyPort}}
    kubernetes {{.ClusterDomain}} in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig "coredns"}} sandbox-local
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
    loop
}
`

// ClusterDNSIP and ClusterDomain, for the templates.
func (Config) ClusterDNSIP() string  { return ClusterDNSIP }
func (Config) ClusterDomain() string { return ClusterDomain }
