// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bytes"
	"os"
	"path/filepath"
	"text/template"
)

// The real node's configuration files, written by WriteNodeConfig from the plane's Config.
var nodeFiles = []struct {
	path string // under NodeDir
	tmpl *template.Template
}{
	{"containerd/config.toml", template.Must(template.New("containerd").Parse(containerdConfig))},
	{"cni/net.d/10-sandbox-local.conflist", template.Must(template.New("cni").Parse(cniConfig))},
	{"kubelet-config.yaml", template.Must(template.New("kubelet").Parse(kubeletConfig))},
	{"kube-proxy.yaml", template.Must(template.New("kube-proxy").Parse(kubeProxyConfig))},
	{"coredns/Corefile", template.Must(template.New("coredns").Parse(corefile))},
}

// WriteNodeConfig writes containerd's, the CNI plugins', kubelet's, kube-proxy's and CoreDNS's
// configuration under NodeDir, and the directories they name.
func (c Config) WriteNodeConfig() error {
	for _, d := range []string{"containerd", "cni/net.d", "run", "kubelet", "coredns"} {
		if err := os.MkdirAll(filepath.Join(c.NodeDir(), d), 0o755); err != nil {
			return err
		}
	}
	for _, f := range nodeFiles {
		var b bytes.Buffer
		if err := f.tmpl.Execute(&b, c); err != nil {
			return err
		}
		// Renamed into place: containerd reloads the CNI configuration as soon as its file changes,
		// and would read a half-written one.
		path := filepath.Join(c.NodeDir(), f.path)
		if err := os.WriteFile(path+".tmp", b.Bytes(), 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig: NRI would listen on a fixed socket under /var/run (nothing here uses it); no
// CAP_SYS_RESOURCE here, so a negative oom_score_adj would be refused; the streaming server (exec,
// attach, port-forward) listens on a free loopback port, and kubelet proxies to it.
const containerdConfig = `# Written by hack/localplane: the local plane's real node.
version = 4
root = '{{.NodeDir}}/containerd/root'
state = '{{.NodeDir}}/containerd/state'
oom_score = 0
disabled_plugins = ['io.containerd.nri.v1.nri']

[plugins.'io.containerd.server.v1.grpc']
  address = '{{.ContainerdSock}}'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '{{.ContainerdSock}}.ttrpc'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'localhost/pause:local'

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '{{.ToolsBin}}/runc'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['{{.CNIBinDir}}']
    conf_dir = '{{.NodeDir}}/cni/net.d'
    use_internal_loopback = true

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`

// cniConfig: pods on the bridge, the node's address their default gateway (so that the Services'
// cluster IPs, which kube-proxy translates on the node, have a route); host-local hands out the
// pod CIDR (the Node's spec.podCIDR) and keeps its leases under the node's directory; portmap
// serves hostPort. No masquerading: pods reach the host, not the outside. A hostPort never takes
// the machine's loopback: portmap's DNAT skips 127.0.0.0/8, and without its SNAT it never sets
// route_localnet on the bridge (which would let a pod reach what listens on 127.0.0.1).
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "sandbox-local",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "{{.NodeBridge}}",
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "{{.NodePodCIDR}}", "gateway": "{{.NodeIP}}"}]],
        "dataDir": "{{.NodeDir}}/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": false,
     "conditionsV4": ["!", "-d", "127.0.0.0/8"]}
  ]
}
`

// kubeletConfig: kubelet serves on the node's address; kube-apiserver's client certificate is
// checked against the cluster CA, and what it may do is asked of kube-apiserver
// (SubjectAccessReview): exec, logs and port-forward pass through here.
const kubeletConfig = `# Written by hack/localplane: the local plane's real node.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.NodeIP}}
port: {{.KubeletPort}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.KubeletHealthzPort}}
tlsCertFile: {{.Certs}}/kubelet-serving-{{.NodeName}}.crt
tlsPrivateKeyFile: {{.Certs}}/kubelet-serving-{{.NodeName}}.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: {{.Certs}}/ca.crt}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://{{.ContainerdSock}}
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
podLogsDirectory: {{.NodeDir}}/pod-logs
# The imported images are the only ones: never collect them, never evict for a busy shared disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "256Mi", nodefs.available: "5%", imagefs.available: "5%", pid.available: "10%"}
serializeImagePulls: false
# CoreDNS, through the kube-dns Service (network.go).
clusterDNS: [{{.ClusterDNSIP}}]
clusterDomain: {{.ClusterDomain}}
# Every container gets containerd's RuntimeDefault seccomp profile unless its pod asks for
# another; each pod at most podPidsLimit processes (a fork bomb stops there); memory and process
# IDs are kept back from the pods for the machine and the plane's own processes.
seccompDefault: true
podPidsLimit: {{.PodPidsLimit}}
systemReserved: {memory: 1Gi, pid: "4096"}
kubeReserved: {memory: 512Mi, pid: "2048"}
`
