// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
)

// KwokStreams is kwok's configuration of exec, logs, attach and port-forward.
func (c Config) KwokStreams() string { return filepath.Join(c.Out, "kwok/streams.yaml") }

// kwokStreamsConfig: kwok's ClusterExec, ClusterLogs, ClusterAttach and ClusterPortForward for
// every pod. Commands run in SandboxWorkDir, as ExecUID when set (the plane runs as root: kwok's
// exec would otherwise be a root shell on the machine for whoever may exec into a pod on a kwok
// node), else as the user running this plane; logs and attach stream
// SandboxWorkDir/container.log; a pod's port P in PORT_FORWARD_PORTS reaches KwokNodeIP:P. kwok
// has one such configuration for all pods: they share the directory, the log and the ports (see
// docs/streams.md).
var kwokStreamsConfig = template.Must(template.New("streams").Parse(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: sandbox-work
spec:
  execs:
  - local:
      workDir: {{.SandboxWorkDir}}
{{- with .ExecUID}}
      securityContext: {runAsUser: {{.}}, runAsGroup: {{.}}}
{{- end}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: sandbox-work
spec:
  logs:
  - logsFile: {{.SandboxWorkDir}}/container.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata:
  name: sandbox-work
spec:
  attaches:
  - logsFile: {{.SandboxWorkDir}}/container.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata:
  name: local-ports
spec:
  forwards:
{{- range .Ports}}
  - ports: [{{.}}]
    target: {address: {{$.Address}}, port: {{.}}}
{{- end}}
`))

// writeKwokStreams writes kwok's streams configuration and makes the work directory and its log,
// which kwok's exec user owns when the plane runs as root.
func (c Config) writeKwokStreams() error {
	if err := os.MkdirAll(c.SandboxWorkDir, 0o755); err != nil {
		return err
	}
	log := filepath.Join(c.SandboxWorkDir, "container.log")
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	execUID := ""
	if os.Geteuid() == 0 {
		execUID = strconv.Itoa(c.KwokExecUID)
		for _, path := range []string{c.SandboxWorkDir, log} {
			if err := os.Chown(path, c.KwokExecUID, c.KwokExecUID); err != nil {
				return err
			}
		}
		if err := os.Chmod(c.SandboxWorkDir, 0o700); err != nil {
			return err
		}
	}
	var ports []int
	for p := c.PortForwardFirst; p <= c.PortForwardLast; p++ {
		ports = append(ports, p)
	}
	var b bytes.Buffer
	if err := kwokStreamsConfig.Execute(&b, struct {
		SandboxWorkDir, ExecUID, Address string
		Ports                            []int
	}{c.SandboxWorkDir, execUID, c.KwokNodeIP.String(), ports}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.KwokStreams()), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.KwokStreams(), b.Bytes(), 0o644)
}

// prepareKwok gives kwok's Nodes their address of their own, KwokNodeIP, on an interface of its
// own recorded in the node's journal (stop deletes it; nothing when that address is loopback),
// and writes kwok's streams configuration. The interface is a bridge without ports: some kernels
// lack the dummy link type.
func (p *Plane) prepareKwok(context.Context) error {
	if p.Config.KwokOwnAddress() {
		journal, err := hostchange.Open(p.Config.JournalPath(), hostchange.Linux{})
		if err != nil {
			return err
		}
		addr := netip.PrefixFrom(p.Config.KwokNodeIP, 32).String()
		if err := journal.MakeBridge(KwokInterface, addr, "local-plane"); err != nil {
			return err
		}
	}
	return p.Config.writeKwokStreams()
}

// kwokNodeNames are the fake Nodes' names.
func (c Config) kwokNodeNames() []string {
	names := make([]string, c.KwokNodes)
	for i := range names {
		names[i] = fmt.Sprintf("kwok-node-%d", i)
	}
	return names
}

// kwokNodeManifests: artifacts/local/kwok/nodes.yaml holds the three default Nodes; another
// number is stamped from its first document.
func (c Config) kwokNodeManifests() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(c.Root, "artifacts/local/kwok/nodes.yaml"))
	if err != nil || c.KwokNodes == 3 {
		return data, err
	}
	first, _, _ := bytes.Cut(data, []byte("\n---"))
	var out bytes.Buffer
	for _, name := range c.kwokNodeNames() {
		out.Write(bytes.ReplaceAll(first, []byte("kwok-node-0"), []byte(name)))
		out.WriteString("\n---\n")
	}
	return out.Bytes(), nil
}

// makeKwokNodes creates the fake Nodes, waits until kwok reports them Ready and lifts the
// not-ready taint the NodeTaint admission put on them (there is no node lifecycle controller to
// do it).
func (p *Plane) makeKwokNodes(ctx context.Context) error {
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	manifests, err := p.Config.kwokNodeManifests()
	if err != nil {
		return err
	}
	if err := cl.applyAll(ctx, manifests); err != nil {
		return err
	}
	// An apply leaves the status of Nodes kept from an earlier start alone; the capacity (pods per
	// Node) is applied to the status subresource as well.
	if err := cl.applyAll(ctx, manifests, "status"); err != nil {
		return err
	}
	// kwok writes the kubelet port (KwokPort, where it serves exec, logs and port-forward) and
	// address (KwokNodeIP) only when it first initializes a Node: a Node kept from an earlier
	// start would send kube-apiserver elsewhere, and its host-network pods would report another
	// address.
	names := p.Config.kwokNodeNames()
	patch := fmt.Appendf(nil, `{"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}},"addresses":[{"type":"InternalIP","address":%q}]}}`,
		p.Config.KwokPort, p.Config.KwokNodeIP.String())
	for _, n := range names {
		if _, err := cl.kube.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		return nil
	}
	p.Log("nodes: waiting for %s to be Ready", strings.Join(names, " "))
	if err := p.waitNodesReady(ctx, names...); err != nil {
		return p.fail("kwok", fmt.Sprintf("nodes not Ready after %s", p.Config.StartTimeout))
	}
	for _, n := range names {
		if err := p.removeTaint(ctx, n, notReadyTaint); err != nil {
			return err
		}
	}
	p.Log("nodes: %s Ready and schedulable", strings.Join(names, " "))
	return nil
}

// notReadyTaint is the taint the NodeTaint admission puts on a new Node.
const notReadyTaint = "node.kubernetes.io/not-ready"

// kwokTaint is the taint kwok's nodes carry while the real node runs: sandboxes land on the real
// node unless their template tolerates it (the benchmarks' and scale tests' pools of hundreds).
var kwokTaint = corev1.Taint{Key: "sandbox-apiserver.dev/kwok", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// taintKwokNodes taints kwok's nodes while the real node runs, and lifts the taint otherwise.
func (p *Plane) taintKwokNodes(ctx context.Context) error {
	kubelet, err := p.Config.Component("kubelet")
	if err != nil {
		return err
	}
	_, nodeRuns := p.runner().Running(kubelet)
	for _, n := range p.Config.kwokNodeNames() {
		if nodeRuns {
			err = p.updateTaints(ctx, n, func(taints []corev1.Taint) []corev1.Taint {
				taints = slices.DeleteFunc(taints, func(t corev1.Taint) bool { return t.Key == kwokTaint.Key })
				return append(taints, kwokTaint)
			})
		} else {
			err = p.removeTaint(ctx, n, kwokTaint.Key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removeTaint removes the Node's taints with key, if it has any.
func (p *Plane) removeTaint(ctx context.Context, node, key string) error {
	return p.updateTaints(ctx, node, func(taints []corev1.Taint) []corev1.Taint {
		return slices.DeleteFunc(taints, func(t corev1.Taint) bool { return t.Key == key })
	})
}

// updateTaints sets the Node's taints to what change makes of them, unless that changes nothing.
// The patch carries the resourceVersion read, so a concurrent change fails it and it is retried.
func (p *Plane) updateTaints(ctx context.Context, node string, change func([]corev1.Taint) []corev1.Taint) error {
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		n, err := cl.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		taints := change(slices.Clone(n.Spec.Taints))
		if slices.EqualFunc(taints, n.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value }) {
			return nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return err
		}
		_, err = cl.kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil || attempt == 4 || !apierrors.IsConflict(err) {
			return err
		}
	}
}

// waitNodesReady waits until every Node named has condition Ready True, at most StartTimeout;
// when one is not, it prints what each says.
func (p *Plane) waitNodesReady(ctx context.Context, names ...string) error {
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	states := make([]string, len(names))
	err = poll(ctx, p.pollInterval(), p.Config.StartTimeout, func() (bool, error) {
		ready := true
		for i, name := range names {
			n, err := cl.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				states[i], ready = fmt.Sprintf("%s: %v", name, err), false
				continue
			}
			ok, state := nodeReady(n)
			states[i], ready = name+": "+state, ready && ok
		}
		return ready, nil
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "    %s\n", strings.Join(states, "\n    "))
	}
	return err
}

// nodeReady reads a Node's Ready condition: whether it is True, and what it says.
func nodeReady(n *corev1.Node) (bool, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, fmt.Sprintf("Ready=%s %s", c.Status, c.Message)
		}
	}
	return false, "no Ready condition yet"
}
