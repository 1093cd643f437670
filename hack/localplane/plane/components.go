// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
)

// Component is one process of the plane.
type Component struct {
	Name string
	// Binary is the executable; Args its flags.
	Binary string
	Args   []string
	// Env is added to the environment the component starts with.
	Env []string
	// Dirs are made (owner-only) before it starts: its data directories.
	Dirs []string
	// Ports it listens on: start refuses to launch it while another process holds one.
	Ports []int
	// Listen is the one address its Ports are bound on, when there is one: only a listener on
	// that address or on every address holds such a port (socat serves kube-apiserver's port
	// on the node's address). Unset, a listener on any address does.
	Listen netip.Addr
	// Ready says when it serves.
	Ready Probe
	// Node: it belongs to the real node (run only as root on Linux).
	Node bool
}

// Log is the component's log file: its output, appended at every start.
func (c Config) Log(name string) string { return filepath.Join(c.Logs(), name+".log") }

// Pidfile holds the component's process ID while it runs.
func (c Config) Pidfile(name string) string { return filepath.Join(c.Pids(), name+".pid") }

// serviceCIDR holds the Services' cluster IPs; kube-proxy routes them on the real node.
const serviceCIDR = "10.0.0.0/24"

// Components is the plane, in start order (stop runs it backwards): what each process runs and
// how the plane knows it is ready. This table is the one place that says how the plane is made;
// startOrder (start.go) starts them in this order, writing the files they name (certificates,
// kubeconfigs, the node's configuration) before each. In the chart mode sandbox-etcd and
// sandbox-apiserver run as the chart's pods on the real node, not as processes here.
func (c Config) Components() []Component {
	all := c.components()
	if c.Mode != ModeChart {
		return all
	}
	var host []Component
	for _, comp := range all {
		if comp.Name != "sandbox-etcd" && comp.Name != "sandbox-apiserver" {
			host = append(host, comp)
		}
	}
	return host
}

func (c Config) components() []Component {
	port := func(p int) string { return strconv.Itoa(p) }
	local := func(p int) string { return "127.0.0.1:" + port(p) }
	healthz := func(p int) Probe {
		// Their serving certificates are self-signed at start-up: nothing to verify them with.
		return Probe{URL: "https://" + local(p) + "/healthz", Insecure: true, Body: "ok"}
	}
	kc := c.Kubeconfig
	return c.withNetwork([]Component{{
		// The cluster's etcd: clients and peers speak TLS and must show a certificate of etcd-ca,
		// which signs only kube-apiserver's client certificate: no other local process (nor a
		// pod that reaches the machine's loopback) can read or write the cluster's objects.
		Name:   "etcd",
		Binary: c.Tool("etcd"),
		Args:   append(c.etcdArgs("local", "https", c.EtcdPort, c.EtcdPeerPort), c.etcdTLSArgs("etcd", "etcd-ca")...),
		Dirs:   []string{filepath.Join(c.Data(), "etcd")},
		Ports:  []int{c.EtcdPort, c.EtcdPeerPort},
		Ready: Probe{URL: "https://" + local(c.EtcdPort) + "/health", CA: c.Cert("etcd-ca.crt"),
			Cert: c.Cert("kube-apiserver-etcd-client.crt"), Key: c.Cert("kube-apiserver-etcd-client.key"), Contains: `"health":"true"`},
	}, {
		// The Endpoints of the "kubernetes" Service may not hold a loopback address, so with
		// --advertise-address=127.0.0.1 the endpoint reconciler is off: on the real node the
		// plane points the Service at the node's address, where socat forwards to kube-apiserver
		// (network.go). PodNodeSelector and PodTolerationRestriction let a namespace's
		// annotations place all its pods: the end-to-end tests of the API and the controllers
		// put theirs on the kwok nodes that way.
		Name:   "kube-apiserver",
		Binary: c.Tool("kube-apiserver"),
		Args: []string{
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + port(c.KubeAPIServerPort),
			"--etcd-servers=https://" + local(c.EtcdPort),
			"--etcd-cafile=" + c.Cert("etcd-ca.crt"),
			"--etcd-certfile=" + c.Cert("kube-apiserver-etcd-client.crt"),
			"--etcd-keyfile=" + c.Cert("kube-apiserver-etcd-client.key"),
			"--cert-dir=" + filepath.Join(c.Data(), "kube-apiserver"),
			"--tls-cert-file=" + c.Cert("kube-apiserver.crt"),
			"--tls-private-key-file=" + c.Cert("kube-apiserver.key"),
			"--client-ca-file=" + c.Cert("ca.crt"),
			"--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction",
			// Pod Security: baseline enforced outside the plane's own namespaces.
			"--admission-control-config-file=" + filepath.Join(c.Root, "artifacts/local/kube-apiserver/admission.yaml"),
			// Privileged pods exist (an administrator may label a namespace privileged); Pod
			// Security decides where.
			"--allow-privileged=true",
			"--service-cluster-ip-range=" + serviceCIDR,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + c.Cert("service-account.pub"),
			"--service-account-signing-key-file=" + c.Cert("service-account.key"),
			"--requestheader-client-ca-file=" + c.Cert("front-proxy-ca.crt"),
			"--requestheader-allowed-names=front-proxy-client",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-username-headers=X-Remote-User",
			"--proxy-client-cert-file=" + c.Cert("front-proxy-client.crt"),
			"--proxy-client-key-file=" + c.Cert("front-proxy-client.key"),
			"--kubelet-certificate-authority=" + c.Cert("ca.crt"),
			"--kubelet-client-certificate=" + c.Cert("kube-apiserver-kubelet-client.crt"),
			"--kubelet-client-key=" + c.Cert("kube-apiserver-kubelet-client.key"),
			"--kubelet-preferred-address-types=InternalIP",
			// The chart's APIServices name a ClusterIP Service: the aggregator dials its
			// endpoints, the server's pods on the node's bridge (this machine routes no Service
			// IPs by itself).
			"--enable-aggregator-routing=" + strconv.FormatBool(c.Mode == ModeChart),
			"--endpoint-reconciler-type=none",
			"--profiling=" + strconv.FormatBool(c.Profiling),
			"--v=1",
		},
		Dirs:   []string{filepath.Join(c.Data(), "kube-apiserver")},
		Ports:  []int{c.KubeAPIServerPort},
		Listen: netip.AddrFrom4([4]byte{127, 0, 0, 1}),
		Ready: Probe{URL: "https://" + local(c.KubeAPIServerPort) + "/readyz", CA: c.Cert("ca.crt"),
			Cert: c.Cert("admin.crt"), Key: c.Cert("admin.key"), Body: "ok"},
	}, {
		// Quotas are recounted every 15s instead of 5m, so that the usage of a new ResourceQuota
		// of our kinds shows soon after it is made. No node IPAM or lifecycle controllers: the
		// Nodes' CIDRs and taints are set by the plane (kwok.go, node.go). Volumes come from
		// local-path-provisioner, next.
		Name:   "kube-controller-manager",
		Binary: c.Tool("kube-controller-manager"),
		Args: []string{
			"--kubeconfig=" + kc("kube-controller-manager"),
			"--authentication-kubeconfig=" + kc("kube-controller-manager"),
			"--authorization-kubeconfig=" + kc("kube-controller-manager"),
			"--bind-address=127.0.0.1",
			"--secure-port=" + port(c.KubeControllerManagerPort),
			"--controllers=*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle",
			"--resource-quota-sync-period=15s",
			"--root-ca-file=" + c.Cert("ca.crt"),
			"--service-account-private-key-file=" + c.Cert("service-account.key"),
			"--use-service-account-credentials=true",
			"--cluster-signing-cert-file=" + c.Cert("ca.crt"),
			"--cluster-signing-key-file=" + c.Cert("ca.key"),
			"--service-cluster-ip-range=" + serviceCIDR,
			"--leader-elect=false",
			"--profiling=false",
			"--v=1",
		},
		Ports: []int{c.KubeControllerManagerPort},
		Ready: healthz(c.KubeControllerManagerPort),
	}, {
		// The volumes' provisioner (artifacts/local/local-path.yaml): it serves nothing, and says
		// in its log when its controller runs (after reading its ConfigMap; it exits when it
		// cannot).
		Name:   "local-path-provisioner",
		Binary: c.Tool("local-path-provisioner"),
		Args: []string{
			"--debug", "start",
			"--kubeconfig=" + kc("local-path-provisioner"),
			"--provisioner-name=rancher.io/local-path",
			"--namespace=local-path-storage",
			"--configmap-name=local-path-config",
			"--service-account-name=local-path-helper",
			"--helper-image=localhost/sandbox:local",
		},
		Ready: Probe{LogLine: "Provisioner started"},
	}, {
		Name:   "kube-scheduler",
		Binary: c.Tool("kube-scheduler"),
		Args: []string{
			"--kubeconfig=" + kc("kube-scheduler"),
			"--authentication-kubeconfig=" + kc("kube-scheduler"),
			"--authorization-kubeconfig=" + kc("kube-scheduler"),
			"--bind-address=127.0.0.1",
			"--secure-port=" + port(c.KubeSchedulerPort),
			"--leader-elect=false",
			"--profiling=false",
			"--v=1",
		},
		Ports: []int{c.KubeSchedulerPort},
		Ready: healthz(c.KubeSchedulerPort),
	}, {
		// The Stages of kwok's module make its Nodes and Pods behave; ours completes
		// local-path-provisioner's helper pods. --node-ip is the address kwok reports for its
		// Nodes and their host-network pods, KwokNodeIP: on this machine, so nothing (kubectl
		// logs/exec through kube-apiserver) ever dials out. The Nodes advertise KwokPort as their
		// kubelet port, where kwok-guard takes only kube-apiserver; kwok serves its health checks,
		// metrics and the kubelet API on loopback at KwokBackendPort, over TLS (streams.yaml:
		// exec, logs, attach, port-forward).
		Name:   "kwok",
		Binary: c.Tool("kwok"),
		Args: []string{
			"--config=" + c.kwokStage("node-initialize"),
			"--config=" + c.kwokStage("node-heartbeat-with-lease"),
			"--config=" + c.kwokStage("pod-ready"),
			"--config=" + c.kwokStage("pod-complete"),
			"--config=" + c.kwokStage("pod-delete"),
			"--config=" + filepath.Join(c.Root, "artifacts/local/kwok/local-path-helper.yaml"),
			"--config=" + filepath.Join(c.Out, "kwok/streams.yaml"),
			"--kubeconfig=" + kc("kwok"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--node-ip=" + c.KwokNodeIP.String(),
			"--node-port=" + port(c.KwokPort),
			"--tls-cert-file=" + c.Cert("kwok-serving.crt"),
			"--tls-private-key-file=" + c.Cert("kwok-serving.key"),
			"--cidr=10.244.0.0/16",
			"--server-address=" + local(c.KwokBackendPort),
		},
		Ports: []int{c.KwokBackendPort},
		Ready: Probe{URL: "https://" + local(c.KwokBackendPort) + "/healthz", CA: c.Cert("ca.crt")},
	}, {
		// kwok authenticates no client: the guard (ServeKwokGuard, run by the local-plane
		// command) serves its kubelet API where the Nodes say it is, to kube-apiserver alone.
		Name:   "kwok-guard",
		Binary: c.LocalPlaneBin(),
		Args:   []string{"-root", c.Root, "kwok-guard"},
		Ports:  []int{c.KwokPort},
		Ready: Probe{URL: "https://" + c.kwokAddr() + "/healthz", CA: c.Cert("ca.crt"),
			Cert: c.Cert("kube-apiserver-kubelet-client.crt"), Key: c.Cert("kube-apiserver-kubelet-client.key")},
	}, {
		// containerd finds its runc shim on PATH.
		Name:   "containerd",
		Binary: c.Tool("containerd"),
		Args:   []string{"--config", filepath.Join(c.NodeDir(), "containerd/config.toml"), "--log-level", "warn"},
		Env:    []string{"PATH=" + c.ToolsBin() + ":" + envOr("PATH", "/usr/bin:/bin")},
		Ready:  Probe{Exec: []string{c.Tool("ctr"), "--address", c.ContainerdSock(), "version"}},
		Node:   true,
	}, {
		Name:   "kubelet",
		Binary: c.Tool("kubelet"),
		Args: []string{
			"--config=" + filepath.Join(c.NodeDir(), "kubelet-config.yaml"),
			"--kubeconfig=" + kc("kubelet"),
			"--root-dir=" + filepath.Join(c.NodeDir(), "kubelet"),
			"--hostname-override=" + c.NodeName,
			"--node-ip=" + c.NodeIP(),
			"--node-labels=type=real",
			"--v=1",
		},
		Ports: []int{c.KubeletPort, c.KubeletHealthzPort},
		Ready: Probe{URL: "http://" + local(c.KubeletHealthzPort) + "/healthz", Body: "ok"},
		Node:  true,
	}, {
		// sandbox-etcd holds the sandbox objects only, so it can be stopped and started on its
		// own. History is compacted periodically (5m). Clients and peers speak TLS and must show
		// a certificate of sandbox-etcd-ca: no other local process can read or write sandbox
		// objects.
		Name:   "sandbox-etcd",
		Binary: c.Tool("etcd"),
		Args: append(append(c.etcdArgs("sandbox-etcd", "https", c.SandboxEtcdPort, c.SandboxEtcdPeerPort),
			c.etcdTLSArgs("sandbox-etcd", "sandbox-etcd-ca")...),
			"--auto-compaction-mode=periodic",
			"--auto-compaction-retention=5m",
		),
		Dirs:  []string{filepath.Join(c.Data(), "sandbox-etcd")},
		Ports: []int{c.SandboxEtcdPort, c.SandboxEtcdPeerPort},
		Ready: Probe{URL: "https://" + local(c.SandboxEtcdPort) + "/health", CA: c.Cert("sandbox-etcd-ca.crt"),
			Cert: c.Cert("sandbox-etcd-client.crt"), Key: c.Cert("sandbox-etcd-client.key"), Contains: `"health":"true"`},
	}, {
		// kwok's pods report their Node's address, KwokNodeIP, as a host-network pod would: when
		// that is an address of their own, sandboxes/proxy and the streams may reach host-network
		// pods there (tests run the sandbox's "process" on it), and nowhere else. One flag a
		// line; SANDBOX_APISERVER_ARGS come last.
		Name:   "sandbox-apiserver",
		Binary: c.SandboxAPIServerBin,
		Args: append([]string{
			"--secure-port=" + port(c.SandboxAPIServerPort),
			"--bind-address=127.0.0.1",
			"--tls-cert-file=" + c.Cert("sandbox-apiserver.crt"),
			"--tls-private-key-file=" + c.Cert("sandbox-apiserver.key"),
			"--kubeconfig=" + kc("sandbox-apiserver"),
			"--authentication-kubeconfig=" + kc("sandbox-apiserver"),
			"--authorization-kubeconfig=" + kc("sandbox-apiserver"),
			"--etcd-servers=https://" + local(c.SandboxEtcdPort),
			"--etcd-cafile=" + c.Cert("sandbox-etcd-ca.crt"),
			"--etcd-certfile=" + c.Cert("sandbox-etcd-client.crt"),
			"--etcd-keyfile=" + c.Cert("sandbox-etcd-client.key"),
			// The E2B endpoint, plain HTTP on loopback; its keys in sandbox-system (the Role in
			// artifacts/local/rbac.yaml); hack/e2b-env.sh (make run) makes a demo key.
			"--e2b-bind-address=" + local(c.E2BPort),
			"--e2b-plain-http",
			"--e2b-api-keys-namespace=sandbox-system",
		}, append(c.kwokHostNetwork(), c.SandboxAPIServerArgs...)...),
		Ports: []int{c.SandboxAPIServerPort, c.E2BPort},
		Ready: Probe{URL: "https://" + local(c.SandboxAPIServerPort) + "/readyz", CA: c.Cert("ca.crt"), Body: "ok"},
	}})
}

// etcdArgs are the flags of a single-member etcd named name (its data in Data()/DIR, where DIR is
// "etcd" for the member named local) serving on 127.0.0.1 with scheme.
func (c Config) etcdArgs(name, scheme string, clientPort, peerPort int) []string {
	dir := name
	if name == "local" {
		dir = "etcd"
	}
	client := scheme + "://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := scheme + "://127.0.0.1:" + strconv.Itoa(peerPort)
	return []string{
		"--name=" + name,
		"--data-dir=" + filepath.Join(c.Data(), dir),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + name + "=" + peer,
		"--initial-cluster-state=new",
		"--log-level=warn",
	}
}

// kwokHostNetwork is sandbox-apiserver's opt-in to kwok's host-network pods, at their Nodes'
// address of their own; none when that is loopback.
func (c Config) kwokHostNetwork() []string {
	if !c.KwokOwnAddress() {
		return nil
	}
	return []string{"--proxy-host-network-cidrs=" + netip.PrefixFrom(c.KwokNodeIP, 32).String()}
}

// etcdTLSArgs are the flags of an etcd serving clients and peers with the certificate cert that
// takes only clients and peers with a certificate of its CA ca.
func (c Config) etcdTLSArgs(cert, ca string) []string {
	return []string{
		"--cert-file=" + c.Cert(cert+".crt"),
		"--key-file=" + c.Cert(cert+".key"),
		"--trusted-ca-file=" + c.Cert(ca+".crt"),
		"--client-cert-auth=true",
		"--peer-cert-file=" + c.Cert(cert+".crt"),
		"--peer-key-file=" + c.Cert(cert+".key"),
		"--peer-trusted-ca-file=" + c.Cert(ca+".crt"),
		"--peer-client-cert-auth=true",
	}
}

func (c Config) kwokStage(name string) string {
	return filepath.Join(c.Root, "_output/tools/kwok-stages", name+".yaml")
}

// Component returns the component called name.
func (c Config) Component(name string) (Component, error) {
	for _, comp := range c.Components() {
		if comp.Name == name {
			return comp, nil
		}
	}
	return Component{}, fmt.Errorf("no component %q", name)
}
