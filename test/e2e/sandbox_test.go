// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// TestSandboxLifecycle follows one Sandbox as a user drives it with kubectl: Ready with a pod IP,
// suspended and resumed with kubectl scale keeping its volume, a headless Service, then deleted
// with everything it made.
func TestSandboxLifecycle(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// A PersistentVolume for the sandbox's claim to bind to: the local cluster has no provisioner.
	pv := "e2e-" + randSuffix(8)
	applyYAML(t, ns, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: /tmp/%s}
`, pv, pv))
	t.Cleanup(func() { kubectlErr(t, "delete", "pv", pv, "--wait=false", "--ignore-not-found") })

	applyYAML(t, ns, `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: agent}
spec:
  podTemplate:
    metadata: {labels: {team: ml}}
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
        volumeMounts: [{name: work, mountPath: /work}]
  volumeClaimTemplates:
  - metadata: {name: work}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/agent", "--timeout=90s")
	podIP := jsonpath(t, ns, "{.status.podIP}", "pod", "agent")
	if podIP == "" {
		t.Fatal("the Ready sandbox's pod has no IP")
	}
	if got := jsonpath(t, ns, "{.status.podIPs[*]}", "sandbox", "agent"); got != podIP {
		t.Errorf("status.podIPs = %q, want the pod's IP %q", got, podIP)
	}
	expectContains(t, "pod labels", jsonpath(t, ns, "{.metadata.labels}", "pod", "agent"), `"team":"ml"`, agentsv1beta1.SandboxNameHashLabel)
	pvcUID := jsonpath(t, ns, "{.metadata.uid}", "pvc", "work-agent")

	// Suspend: the pod goes, the claim stays.
	kubectl(t, "scale", "-n", ns, "sandbox/agent", "--replicas=0")
	kubectl(t, "wait", "-n", ns, "--for=condition=Suspended", "sandbox/agent", "--timeout=60s")
	if out, _, _ := kubectlErr(t, "get", "pod", "agent", "-n", ns, "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("pod still there after the sandbox is suspended: %s", out)
	}
	if got := jsonpath(t, ns, "{.metadata.uid}", "pvc", "work-agent"); got != pvcUID {
		t.Errorf("PVC uid after suspend = %q, want the same %q", got, pvcUID)
	}
	expectContains(t, "suspended Ready", jsonpath(t, ns, `{.status.conditions[?(@.type=="Ready")].reason}`, "sandbox", "agent"), "SandboxSuspended")

	// Resume: a new pod with the same claim.
	kubectl(t, "scale", "-n", ns, "sandbox/agent", "--replicas=1")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/agent", "--timeout=90s")
	if got := jsonpath(t, ns, "{.metadata.uid}", "pvc", "work-agent"); got != pvcUID {
		t.Errorf("PVC uid after resume = %q, want the same %q", got, pvcUID)
	}
	if got := jsonpath(t, ns, "{.spec.volumes[?(@.name==\"work\")].persistentVolumeClaim.claimName}", "pod", "agent"); got != "work-agent" {
		t.Errorf("resumed pod mounts claim %q, want work-agent", got)
	}

	// A headless Service on request, with its FQDN in the status.
	kubectl(t, "patch", "-n", ns, "sandbox/agent", "--type=merge", "-p", `{"spec":{"service":true}}`)
	eventually(t, waitTimeout, "the sandbox's service FQDN", func() (bool, string) {
		fqdn, _, _ := kubectlErr(t, "get", "sandbox", "agent", "-n", ns, "-o", "jsonpath={.status.serviceFQDN}")
		return fqdn == "agent."+ns+".svc.cluster.local", fqdn
	})
	if got := jsonpath(t, ns, "{.spec.clusterIP}", "service", "agent"); got != "None" {
		t.Errorf("service clusterIP = %q, want None (headless)", got)
	}
	// The Service selects the Sandbox's UID, which no other Sandbox shares (not the name hash).
	uid := jsonpath(t, ns, "{.metadata.uid}", "sandbox", "agent")
	expectContains(t, "service selector", jsonpath(t, ns, "{.spec.selector}", "service", "agent"), `"`+agentsv1beta1.SandboxUIDLabel+`":"`+uid+`"`)

	// Deleting the Sandbox deletes its pod, Service and claim.
	kubectl(t, "delete", "-n", ns, "sandbox/agent", "--timeout=90s")
	eventually(t, waitTimeout, "no pod, service or claim left", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "pod,service,pvc", "-n", ns, "-o", "name")
		return len(names(out)) == 0, out
	})
}

// TestSandboxCreatedSuspended: a Sandbox created suspended shows Ready False and Suspended True
// in the create's own answer, and the controller, with nothing to make, writes nothing: the
// Sandbox keeps the resourceVersion and managedFields of its create. Scaled up, it runs as any.
func TestSandboxCreatedSuspended(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const manifest = `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: %s}
spec:
  replicas: %d
  podTemplate:
    spec:
      containers: [{name: agent, image: ghcr.io/example/agent:latest}]
`
	stdout, stderr, err := kubectlWith(t, kubectlOptions{stdin: fmt.Sprintf(manifest, "parked", 0)}, "create", "-n", ns, "-f", "-",
		"-o", `jsonpath={.metadata.resourceVersion} {.status.conditions[?(@.type=="Ready")].reason} {.status.conditions[?(@.type=="Suspended")].status}`)
	if err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, stderr)
	}
	created := strings.Fields(stdout)
	if len(created) != 3 || created[1] != agentsv1beta1.SandboxReasonSuspended || created[2] != "True" {
		t.Fatalf("created: %q, want a resourceVersion, Ready reason %s and Suspended True", stdout, agentsv1beta1.SandboxReasonSuspended)
	}

	// A running Sandbox created after it reaches Ready only after the controller's queue has
	// passed the suspended one.
	if _, stderr, err := kubectlWith(t, kubectlOptions{stdin: fmt.Sprintf(manifest, "running", 1)}, "create", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, stderr)
	}
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/running", "--timeout=90s")
	if rv := jsonpath(t, ns, "{.metadata.resourceVersion}", "sandbox", "parked"); rv != created[0] {
		t.Errorf("resourceVersion %s, want %s: something wrote the suspended Sandbox after its create", rv, created[0])
	}
	if managers := jsonpath(t, ns, "{.metadata.managedFields[*].manager}", "sandbox", "parked"); managers != "kubectl-create" {
		t.Errorf("managedFields managers %q, want only kubectl-create", managers)
	}
	if out, _, _ := kubectlErr(t, "get", "pod", "parked", "-n", ns, "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("a pod for the suspended Sandbox: %s", out)
	}

	kubectl(t, "scale", "-n", ns, "sandbox/parked", "--replicas=1")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/parked", "--timeout=90s")
	if got := jsonpath(t, ns, `{.status.conditions[?(@.type=="Suspended")].type}`, "sandbox", "parked"); got != "" {
		t.Errorf("the running Sandbox still has a Suspended condition")
	}
}

// TestSandboxExpiry: a 5-second shutdownTime deletes a Sandbox under Delete, with its children,
// and keeps it as Ready=False SandboxExpired under Retain.
func TestSandboxExpiry(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	at := time.Now().Add(5 * time.Second).UTC().Format(time.RFC3339)
	applyYAML(t, ns, fmt.Sprintf(`apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: gone}
spec:
  shutdownTime: %q
  shutdownPolicy: Delete
  service: true
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest}]}}
---
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: kept}
spec:
  shutdownTime: %q
  shutdownPolicy: Retain
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest}]}}
`, at, at))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/gone", "sandbox/kept", "--timeout=60s")
	kubectl(t, "wait", "-n", ns, "--for=delete", "sandbox/gone", "--timeout=60s")
	kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=SandboxExpired`, "sandbox/kept", "--timeout=60s")
	eventually(t, waitTimeout, "the expired sandboxes' pods and service gone", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "pods,services", "-n", ns, "-o", "name")
		return len(names(out)) == 0, out
	})
	if got := jsonpath(t, ns, `{.status.conditions[?(@.type=="Ready")].status}`, "sandbox", "kept"); got != "False" {
		t.Errorf("Retained sandbox Ready = %q, want False", got)
	}
}

// TestSandboxCreationsSurviveRestart restarts sandbox-apiserver while 50 Sandboxes are being
// created: each ends Ready with exactly one pod.
func TestSandboxCreationsSurviveRestart(t *testing.T) {
	const count = 50
	ns := newNamespace(t)
	kube, client := adminClients(t)
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, count)
	create := func(i int) {
		defer wg.Done()
		sb := &agentsv1beta1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sb-%02d", i)},
			Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}},
			}}},
		}
		// The server goes away in the middle: retry each create until it is stored.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			_, err := client.AgentsV1beta1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
			if err == nil || strings.Contains(err.Error(), "already exists") {
				return
			}
			if time.Now().After(deadline) {
				errs <- err
				return
			}
			time.Sleep(200 * time.Millisecond) // retry pace while the server restarts
		}
	}
	for i := range count {
		wg.Add(1)
		go create(i)
		if i == count/2 {
			localUpT(t, 2*time.Minute, "restart-sandbox-apiserver")
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating a sandbox across the restart: %v", err)
	}
	eventually(t, 3*time.Minute, "every sandbox Ready", func() (bool, string) {
		list, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, sb := range list.Items {
			for _, c := range sb.Status.Conditions {
				if c.Type == "Ready" && c.Status == metav1.ConditionTrue {
					ready++
				}
			}
		}
		return len(list.Items) == count && ready == count, fmt.Sprintf("%d sandboxes, %d Ready", len(list.Items), ready)
	})
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	perSandbox := map[string]int{}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "Sandbox" {
			perSandbox[ref.Name]++
		}
	}
	if len(pods.Items) != count || len(perSandbox) != count {
		t.Errorf("%d pods for %d sandboxes, want exactly one each: %v", len(pods.Items), len(perSandbox), perSandbox)
	}
	for name, n := range perSandbox {
		if n != 1 {
			t.Errorf("sandbox %s has %d pods", name, n)
		}
	}
}
