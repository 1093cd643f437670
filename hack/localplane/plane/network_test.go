// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The network components come right after kubelet, before sandbox-apiserver makes sandboxes; their
// configuration names the node's address for what they serve and loopback for the rest; the
// cluster objects point kube-dns and kubernetes at the node's address.
func TestNetworkConfig(t *testing.T) {
	t.Setenv("NODE_POD_CIDR", "10.99.0.0/24")
	cfg, err := ConfigFromEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cfg.Components() {
		names = append(names, c.Name)
	}
	i := slices.Index(names, "kubelet")
	if want := []string{"kubelet", "kube-proxy", "kube-router", "coredns", "kubernetes-service", "sandbox-etcd"}; i < 0 || !slices.Equal(names[i:i+len(want)], want) {
		t.Errorf("components %v; want %v in a row", names, want)
	}
	socat, err := cfg.Component("kubernetes-service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(socat.Args[0], ",bind=10.99.0.1,") || socat.Args[1] != "TCP:127.0.0.1:6443" {
		t.Errorf("socat %v; want it to listen on the node's address and forward to kube-apiserver on loopback", socat.Args)
	}

	if err := cfg.WriteNodeConfig(); err != nil {
		t.Fatal(err)
	}
	var proxy struct {
		Mode               string   `json:"mode"`
		ClusterCIDR        string   `json:"clusterCIDR"`
		HealthzBindAddress string   `json:"healthzBindAddress"`
		MetricsBindAddress string   `json:"metricsBindAddress"`
		NodePortAddresses  []string `json:"nodePortAddresses"`
		IPTables           struct {
			LocalhostNodePorts *bool `json:"localhostNodePorts"`
		} `json:"iptables"`
	}
	b, _ := os.ReadFile(filepath.Join(cfg.NodeDir(), "kube-proxy.yaml"))
	if err := yaml.Unmarshal(b, &proxy); err != nil {
		t.Fatalf("kube-proxy.yaml: %v\n%s", err, b)
	}
	if proxy.Mode != "iptables" || proxy.ClusterCIDR != "10.99.0.0/24" || proxy.HealthzBindAddress != "127.0.0.1:10256" ||
		proxy.MetricsBindAddress != "127.0.0.1:10249" || !slices.Equal(proxy.NodePortAddresses, []string{"10.99.0.1/32"}) ||
		proxy.IPTables.LocalhostNodePorts == nil || *proxy.IPTables.LocalhostNodePorts {
		t.Errorf("kube-proxy configuration %+v", proxy)
	}
	corefile, _ := os.ReadFile(filepath.Join(cfg.NodeDir(), "coredns/Corefile"))
	for _, want := range []string{"bind 10.99.0.1\n", "ready 127.0.0.1:8181\n", "kubernetes cluster.local ", cfg.Kubeconfig("coredns")} {
		if !strings.Contains(string(corefile), want) {
			t.Errorf("Corefile lacks %q:\n%s", want, corefile)
		}
	}
	kubelet, _ := os.ReadFile(filepath.Join(cfg.NodeDir(), "kubelet-config.yaml"))
	if !strings.Contains(string(kubelet), "clusterDNS: [10.0.0.10]\n") {
		t.Errorf("kubelet's clusterDNS is not the kube-dns Service's IP:\n%s", kubelet)
	}

	objects, err := cfg.clusterObjects()
	if err != nil {
		t.Fatal(err)
	}
	endpoints := map[string]string{}
	for doc := range strings.SplitSeq(string(objects), "\n---\n") {
		var o struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct{ ClusterIP string }
			Endpoint []struct{ Addresses []string } `json:"endpoints"`
			Ports    []struct{ Port int32 }         `json:"ports"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("cluster objects: %v\n%s", err, doc)
		}
		switch o.Kind {
		case "Service":
			if o.Spec.ClusterIP != ClusterDNSIP {
				t.Errorf("kube-dns's cluster IP %s, want %s", o.Spec.ClusterIP, ClusterDNSIP)
			}
		case "EndpointSlice":
			endpoints[o.Metadata.Name] = o.Endpoint[0].Addresses[0]
		}
	}
	for _, name := range []string{"kube-dns-local-node", "kubernetes-local-node"} {
		if endpoints[name] != "10.99.0.1" {
			t.Errorf("EndpointSlice %s points at %q; want the node's 10.99.0.1", name, endpoints[name])
		}
	}
}
