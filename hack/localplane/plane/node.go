// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
)

// The local plane's real node: containerd (with runc and Debian's CNI plugins) and kubelet,
// joined to the plane's kube-apiserver, running pods of images built locally
// (hack/build-node-images.sh) and imported into containerd.

// NodeImages holds the node's images as tar files.
func (c Config) NodeImages() string { return filepath.Join(c.Root, "_output/tools/images") }

// nodeSandboxImage also answers to the names the examples and the tests use (nodeImageAliases),
// so their pods run it without a registry (docs/local-plane.md). A MutatingAdmissionPolicy gives
// containers of these names imagePullPolicy IfNotPresent: a tag of latest, or none, would mean
// Always, a pull that no registry here answers.
const nodeSandboxImage = "localhost/sandbox:local"

var (
	nodeImageAliases = []string{
		"ghcr.io/example/agent:latest", "ghcr.io/example/agent:v1",
		"ghcr.io/example/helper:latest", "ghcr.io/example/db:latest", "ghcr.io/example/cache:latest",
		"registry.example.com/agent:v1",
		"busybox", "busybox:latest", "alpine:latest", "python:3.13",
		"us-central1-docker.pkg.dev/k8s-staging-images/agent-sandbox/python-runtime-sandbox:latest-main",
	}
	// nodeImageFiles are the tar files imported, in order (pause first: every pod needs it).
	nodeImageFiles  = []string{"pause", "noshell", "sandbox"}
	nodeImagesLocal = []string{"localhost/sandbox:local", "localhost/noshell:local", "localhost/pause:local"}
	// nodeTools are the node's binaries in _output/tools/bin; nodeCNIPlugins Debian's plugins.
	nodeTools      = []string{"kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "runc"}
	nodeCNIPlugins = []string{"bridge", "host-local", "portmap"}
)

// nodeMissing lists what the real node needs and does not find: its binaries, images and CNI
// plugins, and its network's (networkMissing).
func (c Config) nodeMissing() []string {
	var missing []string
	for _, t := range nodeTools {
		if !executable(c.Tool(t)) {
			missing = append(missing, t)
		}
	}
	for _, t := range nodeImageFiles {
		if info, err := os.Stat(filepath.Join(c.NodeImages(), t+".tar")); err != nil || info.Size() == 0 {
			missing = append(missing, "image-"+t)
		}
	}
	for _, t := range nodeCNIPlugins {
		if !executable(filepath.Join(c.CNIBinDir, t)) {
			missing = append(missing, "CNI-"+t)
		}
	}
	return append(missing, c.networkMissing()...)
}

func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode().Perm()&0o111 != 0
}

// nodeHost is what decides whether the real node can run here; the real machine's answers are
// realHost, tests give others.
type nodeHost struct {
	os      string
	uid     int
	missing []string
	// foreignKubelet: a kubelet runs on this machine that is not this plane's.
	foreignKubelet bool
}

// whyNoNode says why the real node cannot run here ("" when it can).
func whyNoNode(h nodeHost) string {
	switch {
	case h.os != "linux":
		return "a real node needs Linux"
	case h.uid != 0:
		return "a real node needs root (containers, mounts, a bridge, cgroups)"
	case len(h.missing) > 0:
		return "missing " + strings.Join(h.missing, " ") +
			" (run make tools as root: it builds them and installs Debian's CNI plugins, ipset and socat)"
	case h.foreignKubelet:
		return "another kubelet runs on this machine (one real node per machine)"
	}
	return ""
}

// nodeEnabled decides whether start runs the real node, saying why not when it does not; with
// LOCAL_NODE=true a node that cannot run is an error.
func (p *Plane) nodeEnabled() (bool, error) {
	if p.Config.LocalNode == NodeOff {
		p.Log("node: LOCAL_NODE=false: kwok's nodes alone")
		return false, nil
	}
	kubelet, err := p.Config.Component("kubelet")
	if err != nil {
		return false, err
	}
	ours, running := p.runner().Running(kubelet)
	h := nodeHost{os: runtime.GOOS, uid: os.Getuid(), missing: p.Config.nodeMissing()}
	if !running {
		h.foreignKubelet = processNamed("kubelet", ours)
	}
	why := whyNoNode(h)
	switch {
	case why == "":
		return true, nil
	case p.Config.LocalNode == NodeOn:
		return false, fmt.Errorf("node: LOCAL_NODE=true but %s", why)
	}
	p.Log("node: not started: %s; kwok's nodes alone", why)
	return false, nil
}

// processNamed reports whether a process other than except runs a command named name.
func processNamed(name string, except int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == except {
			continue
		}
		if comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == name {
			return true
		}
	}
	return false
}

// nodeTouched reports whether the node ran, or left something behind.
func (c Config) nodeTouched() bool {
	for _, f := range []string{c.Pidfile("kubelet"), c.Pidfile("containerd"), c.NodeDir(), c.JournalPath()} {
		if _, err := os.Lstat(f); err == nil {
			return true
		}
	}
	return false
}

// prepareContainerd records the node's host changes (and makes the bridge) before any is made,
// and writes the node's configuration. A containerd without its root directory has no
// containers: stop removed them, so the pods bound to this node are gone too; afterContainerd
// deletes those, and their owners make new ones (a pod that never restarts would otherwise stay
// Failed).
func (p *Plane) prepareContainerd(context.Context) error {
	journal, err := hostchange.Open(p.Config.JournalPath(), hostchange.Linux{})
	if err != nil {
		return err
	}
	if err := p.Config.recordNode(journal); err != nil {
		return err
	}
	if err := p.Config.WriteNodeConfig(); err != nil {
		return err
	}
	_, err = os.Stat(filepath.Join(p.Config.NodeDir(), "containerd/root"))
	p.nodeFresh = os.IsNotExist(err)
	return nil
}

func (p *Plane) afterContainerd(ctx context.Context) error {
	if err := p.importNodeImages(ctx); err != nil {
		return err
	}
	if !p.nodeFresh {
		return nil
	}
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	pods, err := cl.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", p.Config.NodeName).String()})
	if err != nil {
		return nil // best effort, as before: the pods' owners notice in time
	}
	zero := int64(0)
	for _, pod := range pods.Items {
		_ = cl.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	return nil
}

// normalizeImage is the name containerd keeps ref under (docker.io/library/..., :latest).
func normalizeImage(ref string) string {
	if i := strings.LastIndexByte(ref, '/'); !strings.Contains(ref[i+1:], ":") {
		ref += ":latest"
	}
	domain, _, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io/library/" + ref
	case !strings.ContainsAny(domain, ".:") && domain != "localhost":
		return "docker.io/" + ref
	}
	return ref
}

// importNodeImages imports the node's images into containerd and tags the sandbox image with its
// aliases.
func (p *Plane) importNodeImages(ctx context.Context) error {
	start := time.Now()
	ctr := func(args ...string) error {
		args = append([]string{"--address", p.Config.ContainerdSock(), "--namespace", "k8s.io"}, args...)
		// ctr warns on every call that cgroup v1 is deprecated: its output is shown only on failure.
		out, err := exec.CommandContext(ctx, p.Config.Tool("ctr"), args...).CombinedOutput()
		if err != nil {
			os.Stderr.Write(out)
		}
		return err
	}
	for _, name := range nodeImageFiles {
		tar := filepath.Join(p.Config.NodeImages(), name+".tar")
		if err := ctr("images", "import", tar); err != nil {
			return p.fail("containerd", fmt.Sprintf("importing %s failed", p.rel(tar)))
		}
	}
	for _, alias := range nodeImageAliases {
		if err := ctr("images", "tag", "--force", nodeSandboxImage, normalizeImage(alias)); err != nil {
			return p.fail("containerd", fmt.Sprintf("tagging %s failed", alias))
		}
	}
	p.Log("node: images imported in %ds: %s", int(time.Since(start).Seconds()), strings.Join(nodeImagesLocal, " "))
	p.Log("node: the sandbox image (shell, coreutils, tar, python3) also serves: %s", strings.Join(nodeImageAliases, " "))
	return nil
}

// pullPolicy is the MutatingAdmissionPolicy that gives containers of the locally served images
// imagePullPolicy IfNotPresent.
var pullPolicy = template.Must(template.New("pull-policy").Parse(`# Written by hack/local-up.sh: the images the local plane's node serves are never pulled.
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: local-node-images
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{spec: Object.spec{
          containers: object.spec.containers.filter(c, c.image in [{{.}}]).map(c,
            Object.spec.containers{name: c.name, imagePullPolicy: "IfNotPresent"}),
          initContainers: (has(object.spec.initContainers) ? object.spec.initContainers : []).filter(c, c.image in [{{.}}]).map(c,
            Object.spec.initContainers{name: c.name, imagePullPolicy: "IfNotPresent"})
        }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: local-node-images
spec:
  policyName: local-node-images
`))

// pullPolicyManifest renders pullPolicy for every locally served image.
func pullPolicyManifest() ([]byte, error) {
	var names []string
	for _, n := range append(append([]string{}, nodeImageAliases...), nodeImagesLocal...) {
		names = append(names, "'"+n+"'")
	}
	var b strings.Builder
	err := pullPolicy.Execute(&b, strings.Join(names, ","))
	return []byte(b.String()), err
}

// prepareKubelet writes kubelet's credentials and configuration, creates its Node with its pod
// CIDR (there is no node IPAM controller here to give it one) and applies the pull policy.
func (p *Plane) prepareKubelet(ctx context.Context) error {
	if err := p.Config.WriteCredentials(true, p.certLog); err != nil {
		return err
	}
	if err := p.Config.WriteNodeConfig(); err != nil {
		return err
	}
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: p.Config.NodeName, Labels: map[string]string{
			"type": "real", "kubernetes.io/hostname": p.Config.NodeName, "kubernetes.io/os": "linux"}},
		Spec: corev1.NodeSpec{PodCIDR: p.Config.NodePodCIDR.String(), PodCIDRs: []string{p.Config.NodePodCIDR.String()}},
	}
	if _, err := cl.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("node %s: %w", p.Config.NodeName, err)
	}
	policy, err := pullPolicyManifest()
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(p.Config.Manifests(), "local-node-images.yaml"), policy); err != nil {
		return err
	}
	if err := cl.applyAll(ctx, policy); err != nil {
		return err
	}
	p.kubeletStarted = time.Now()
	return nil
}

// afterKubelet waits until kubelet's Node is Ready and lifts its not-ready taint.
func (p *Plane) afterKubelet(ctx context.Context) error {
	if err := p.waitNodesReady(ctx, p.Config.NodeName); err != nil {
		return p.fail("kubelet", fmt.Sprintf("node %s not Ready after %s", p.Config.NodeName, seconds(p.Config.StartTimeout)))
	}
	if err := p.removeTaint(ctx, p.Config.NodeName, notReadyTaint); err != nil {
		return err
	}
	p.Log("node: %s Ready %ds after kubelet's start", p.Config.NodeName, int(time.Since(p.kubeletStarted).Seconds()))
	return nil
}

// nodeStatus is status's line for the real node.
func (p *Plane) nodeStatus(ctx context.Context) string {
	ready := "unknown"
	if cl, err := p.cluster(); err == nil {
		if n, err := cl.kube.CoreV1().Nodes().Get(ctx, p.Config.NodeName, metav1.GetOptions{}); err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = string(c.Status)
				}
			}
		}
	}
	return fmt.Sprintf("%-24s Ready=%s (pods %s on %s, kubelet %s:%d)", "node "+p.Config.NodeName, ready,
		p.Config.NodePodCIDR, p.Config.NodeBridge, p.Config.NodeIP(), p.Config.KubeletPort)
}

// recordNode records every change the node is about to make, and makes the bridge as it records
// it (with the node's address, before kubelet, which serves there; the bridge plugin finds it and
// adds the pods' ends).
func (c Config) recordNode(journal *hostchange.Journal) error {
	for _, ch := range c.nodeChanges(cgroupRoot) {
		var err error
		if ch.Kind == hostchange.Interface {
			err = journal.MakeBridge(ch.Name, c.nodeAddr(), ch.By)
		} else {
			_, err = journal.Record(ch)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// RestoreHost kills the runc shims of this plane's containerd (they outlive it by design), then
// undoes the journal: the pods' processes killed and their cgroups removed, mounts unmounted, the
// paths, bridge and chains the node made removed, sysctls set back.
func (c Config) RestoreHost(log func(string, ...any)) error {
	journal, err := hostchange.Open(c.JournalPath(), hostchange.Linux{})
	if err != nil {
		return err
	}
	if journal.Empty() {
		return nil
	}
	if err := killByExecutable(c.Tool("containerd-shim-runc-v2")); err != nil {
		log("WARNING: node: %v", err)
	}
	if err := journal.Undo(func(s string) { log("node: %s", s) }); err != nil {
		return fmt.Errorf("node: host not fully restored (left in %s for the next stop): %w", c.JournalPath(), err)
	}
	log("node: host restored (containers, mounts, bridge, cgroups, paths, iptables chains, IP sets, sysctls)")
	return nil
}
