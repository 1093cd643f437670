// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/certs"
)

// certDays: the plane's certificates outlive any checkout.
const certDays = 3650

// ServiceIP is the kubernetes Service's cluster IP, the first of serviceCIDR.
const ServiceIP = "10.0.0.1"

// SandboxUser is the user sandbox-apiserver acts as in the cluster (artifacts/local/rbac.yaml).
const SandboxUser = "system:sandbox-apiserver"

// credential is a leaf certificate of the plane and, for a client of kube-apiserver, the
// kubeconfig that carries it (the user is the certificate's CN).
type credential struct {
	leaf       certs.Leaf
	kubeconfig string
}

// cas are the plane's CAs: the cluster's (users, servers, kubelets), the front proxy's
// (kube-apiserver to the aggregated server), the cluster etcd's and sandbox-etcd's. Each etcd's
// signs nothing but that etcd's own certificate and its one client's, so kube-apiserver's and
// sandbox-apiserver's client certificates are the one credential that reads or writes there.
var cas = []struct{ name, cn string }{
	{"ca", "sandbox-local-ca"},
	{"front-proxy-ca", "sandbox-local-front-proxy-ca"},
	{"etcd-ca", "sandbox-local-cluster-etcd-ca"},
	{"sandbox-etcd-ca", "sandbox-local-etcd-ca"},
}

// credentials is the table of the plane's certificates; with node, the real node's too.
func (c Config) credentials(node bool) []credential {
	leaf := func(name, ca, cn, org string, usage certs.Usage, sans ...string) certs.Leaf {
		l := certs.Leaf{Name: name, CA: ca, CN: cn, Usage: usage, Days: certDays, SANs: sans}
		if org != "" {
			l.Orgs = []string{org}
		}
		return l
	}
	client := func(name, cn, org string) credential {
		kc := c.Kubeconfig(name)
		if name == "admin" {
			kc = c.AdminKubeconfig()
		}
		return credential{leaf: leaf(name, "ca", cn, org, certs.Client), kubeconfig: kc}
	}
	out := []credential{
		{leaf: leaf("kube-apiserver", "ca", "kube-apiserver", "", certs.Server, "127.0.0.1", "localhost", ServiceIP,
			"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")},
		{leaf: leaf("front-proxy-client", "front-proxy-ca", "front-proxy-client", "", certs.Client)},
		client("admin", "admin", "system:masters"),
		client("kube-controller-manager", "system:kube-controller-manager", ""),
		client("kube-scheduler", "system:kube-scheduler", ""),
		client("local-path-provisioner", "system:local-path-provisioner", ""),
		client("kwok", "kwok", "system:masters"),
		// kwok serves the kubelet API (exec, attach, logs, port-forward) over TLS; kube-apiserver
		// verifies it with the cluster CA and shows its own client certificate.
		{leaf: leaf("kwok-serving", "ca", "kwok-serving", "", certs.Server, c.KwokNodeIP.String(), "127.0.0.1", "localhost")},
		{leaf: leaf("kube-apiserver-kubelet-client", "ca", "kube-apiserver-kubelet-client", "", certs.Client)},
		{leaf: leaf("sandbox-apiserver-client", "ca", SandboxUser, "", certs.Client), kubeconfig: c.Kubeconfig("sandbox-apiserver")},
		// The aggregator checks the name <service>.<namespace>.svc; kubectl and the probes use
		// localhost and 127.0.0.1.
		{leaf: leaf("sandbox-apiserver", "ca", "sandbox-apiserver", "", certs.Server, "localhost", "127.0.0.1",
			"sandbox-apiserver.sandbox-system.svc", "sandbox-apiserver.sandbox-system.svc.cluster.local")},
		{leaf: leaf("etcd", "etcd-ca", "etcd", "", certs.Peer, "127.0.0.1", "localhost")},
		{leaf: leaf("kube-apiserver-etcd-client", "etcd-ca", "kube-apiserver", "", certs.Client)},
		{leaf: leaf("sandbox-etcd", "sandbox-etcd-ca", "sandbox-etcd", "", certs.Peer, "127.0.0.1", "localhost")},
		{leaf: leaf("sandbox-etcd-client", "sandbox-etcd-ca", "sandbox-apiserver", "", certs.Client)},
	}
	if node {
		out = append(out,
			// The Node authorizer knows kubelet's client certificate as the node NodeName.
			credential{leaf: leaf("kubelet-"+c.NodeName, "ca", "system:node:"+c.NodeName, "system:nodes", certs.Client),
				kubeconfig: c.Kubeconfig("kubelet")},
			// kubelet serves on the node's address; kube-apiserver verifies it with the cluster CA.
			credential{leaf: leaf("kubelet-serving-"+c.NodeName, "ca", c.NodeName, "", certs.Server,
				c.NodeIP(), c.NodeName, "localhost", "127.0.0.1")},
			// The network components (network.go); kube-proxy's user is bound to Kubernetes' own
			// system:node-proxier, the others to the roles of clusterObjects.
			client("kube-proxy", "system:kube-proxy", ""),
			client("kube-router", "system:kube-router", ""),
			client("coredns", "system:coredns", ""))
	}
	return out
}

// AdminKubeconfig is the system:masters kubeconfig users get.
func (c Config) AdminKubeconfig() string { return filepath.Join(c.Out, "kubeconfig") }

// WriteCredentials makes the CAs, the certificates (kept while they are good) and the service
// account key pair, and writes every kubeconfig (data embedded, mode 0600).
func (c Config) WriteCredentials(node bool, report func(string)) error {
	d := certs.Dir{Path: c.Certs(), Report: report}
	for _, ca := range cas {
		if err := d.EnsureCA(ca.name, ca.cn, certDays); err != nil {
			return err
		}
	}
	for _, cr := range c.credentials(node) {
		if err := d.EnsureLeaf(cr.leaf); err != nil {
			return err
		}
	}
	if err := d.EnsureKeyPair("service-account"); err != nil {
		return err
	}
	if err := privateDir(c.Kubeconfigs()); err != nil {
		return err
	}
	for _, cr := range c.credentials(node) {
		if cr.kubeconfig == "" {
			continue
		}
		if err := c.writeKubeconfig(cr.kubeconfig, cr.leaf.CN, cr.leaf.Name); err != nil {
			return err
		}
	}
	return nil
}

// writeKubeconfig writes a self-contained kubeconfig for user with the certificate cert.
func (c Config) writeKubeconfig(path, user, cert string) error {
	read := func(name string) ([]byte, error) { return os.ReadFile(c.Cert(name)) }
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(cert + ".crt")
	if err != nil {
		return err
	}
	key, err := read(cert + ".key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox-local"] = &clientcmdapi.Cluster{
		Server:                   "https://127.0.0.1:" + strconv.Itoa(c.KubeAPIServerPort),
		CertificateAuthorityData: ca,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts["sandbox-local"] = &clientcmdapi.Context{Cluster: "sandbox-local", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "sandbox-local"
	// The admin's kubeconfig is in Out itself, which must stay open (see privateDir).
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := clientcmd.WriteToFile(*cfg, tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
