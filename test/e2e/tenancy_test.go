// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// The tenancy tests play the attacks of a tenant who may only create claims, and of a namespace
// edit user, against the controllers, which act with the server's own rights. Each attack must
// fail and leave its victim exactly as it was.

// tenancyTemplates are two templates: db, whose sandboxes have a volume claim template "data",
// and plain, a pod and a headless Service.
const tenancyTemplates = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: db}
spec:
  podTemplate:
    spec:
      containers:
      - name: db
        image: ghcr.io/example/agent:latest
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: plain}
spec:
  service: true
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
`

// tenancyVictims are objects of the namespace that no sandbox made: the database's PVC
// data-postgres-0, a bare pod db-0, a headless Service web, a PVC work-notes, and a pod cache
// controlled by the ConfigMap owner (its UID is filled in: %s).
const tenancyVictims = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-postgres-0, labels: {app: postgres}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, labels: {app: db}}
spec:
  containers:
  - name: db
    image: ghcr.io/example/db:latest
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}}
spec:
  clusterIP: None
  selector: {app: db}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: work-notes}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata:
  name: cache
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: %s, controller: true}
spec:
  containers:
  - name: cache
    image: ghcr.io/example/cache:latest
`

// victimState is what must not change about an object no sandbox made.
func victimState(t *testing.T, kube kubernetes.Interface, ns, kind, name string) string {
	t.Helper()
	ctx := context.Background()
	var meta metav1.ObjectMeta
	var spec any
	var err error
	switch kind {
	case "pod":
		var o *corev1.Pod
		if o, err = kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta, spec = o.ObjectMeta, o.Spec
		}
	case "service":
		var o *corev1.Service
		if o, err = kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta, spec = o.ObjectMeta, o.Spec
		}
	case "pvc":
		var o *corev1.PersistentVolumeClaim
		if o, err = kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta, spec = o.ObjectMeta, o.Spec
		}
	}
	if err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
	b, err := json.Marshal(map[string]any{
		"uid": meta.UID, "ownerReferences": meta.OwnerReferences, "labels": meta.Labels,
		"annotations": meta.Annotations, "finalizers": meta.Finalizers, "deleting": meta.DeletionTimestamp != nil, "spec": spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTenantCannotTakeOverByName (attack 1): a claim-only tenant names claims after existing
// objects (the Sandbox is named after the claim, its PVCs <template>-<claim>), and an edit user
// names Sandboxes after them. The controllers take none of them over: every victim keeps its UID,
// owners, labels, annotations and spec while the sandboxes live and after they are deleted, and
// each sandbox, and the claim mirroring it, reports Ready=False OwnershipConflict naming the object.
func TestTenantCannotTakeOverByName(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kube, _ := adminClients(t)
	tenant, editor := "tenant-"+randSuffix(5), "editor-"+randSuffix(5)
	grantTenant(t, ns, tenant)
	bindClusterRole(t, ns, editor, "edit")
	waitCanI(t, "create", "sandboxclaims.extensions.agents.x-k8s.io", "-n", ns, "--as="+tenant)
	waitCanI(t, "create", "sandboxes.agents.x-k8s.io", "-n", ns, "--as="+editor)

	applyYAML(t, ns, tenancyTemplates)
	owner, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applyYAML(t, ns, fmt.Sprintf(tenancyVictims, owner.UID))
	// Settled first: the scheduler and kwok still write to the pods until they run, the plane's
	// volume provisioner and the binder to the claims until they are Bound.
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "pod/db-0", "pod/cache", "--timeout=90s")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Bound", "pvc/data-postgres-0", "pvc/work-notes", "--timeout=60s")
	victims := [][2]string{{"pvc", "data-postgres-0"}, {"pod", "db-0"}, {"service", "web"}, {"pvc", "work-notes"}, {"pod", "cache"}}
	before := map[string]string{}
	for _, v := range victims {
		before[v[0]+"/"+v[1]] = victimState(t, kube, ns, v[0], v[1])
	}
	expectUnchanged := func(when string) {
		t.Helper()
		for _, v := range victims {
			if got := victimState(t, kube, ns, v[0], v[1]); got != before[v[0]+"/"+v[1]] {
				t.Errorf("%s: %s %s changed:\nbefore: %s\nafter:  %s", when, v[0], v[1], before[v[0]+"/"+v[1]], got)
			}
		}
	}

	// The tenant's claims: cold (no pool), so each gets a Sandbox named after it.
	for _, c := range [][2]string{{"postgres-0", "db"}, {"db-0", "plain"}} {
		kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, c[0], c[1]), "create", "-n", ns, "-f", "-", "--as="+tenant)
	}
	// The edit user's Sandboxes.
	kubectlAsStdin(t, "", `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: web}
spec:
  service: true
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest}]}}
---
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: notes}
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest, volumeMounts: [{name: work, mountPath: /work}]}]}}
  volumeClaimTemplates:
  - metadata: {name: work}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: cache}
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest}]}}
`, "create", "-n", ns, "-f", "-", "--as="+editor)

	conflicts := map[string]string{
		"sandboxclaim/postgres-0": `PersistentVolumeClaim "data-postgres-0"`,
		"sandboxclaim/db-0":       `Pod "db-0"`,
		"sandbox/web":             `Service "web"`,
		"sandbox/notes":           `PersistentVolumeClaim "work-notes"`,
		"sandbox/cache":           `Pod "cache" already exists and is controlled by ConfigMap "owner"`,
	}
	for _, ref := range slices.Sorted(maps.Keys(conflicts)) {
		kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=OwnershipConflict`, ref, "--timeout=90s")
		msg := kubectl(t, "get", "-n", ns, ref, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
		expectContains(t, ref+" Ready message", msg, conflicts[ref], "left as it is")
	}
	eventually(t, waitTimeout, "an OwnershipConflict event for each sandbox", func() (bool, string) {
		events := strings.Fields(kubectl(t, "get", "events", "-n", ns, "--field-selector=reason=OwnershipConflict",
			"-o", "jsonpath={.items[*].involvedObject.name}"))
		for _, name := range []string{"postgres-0", "db-0", "web", "notes", "cache"} {
			if !slices.Contains(events, name) {
				return false, fmt.Sprintf("events for %v", events)
			}
		}
		return true, ""
	})
	expectUnchanged("while the sandboxes live")

	kubectl(t, "delete", "-n", ns, "sandboxclaim/postgres-0", "sandboxclaim/db-0", "--as="+tenant, "--timeout=90s")
	kubectl(t, "delete", "-n", ns, "sandbox/web", "sandbox/notes", "sandbox/cache", "--as="+editor, "--timeout=90s")
	kubectl(t, "wait", "-n", ns, "--for=delete", "sandbox/postgres-0", "sandbox/db-0", "--timeout=90s")
	expectUnchanged("after the claims and sandboxes are deleted")
}

// nameHash is the 32-bit FNV-1a hash the seeds label a sandbox's children with, as 8 hex digits.
func nameHash(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// collidingNames finds two valid object names with the same nameHash (a birthday search: some
// tens of thousands of names).
func collidingNames(t *testing.T) (string, string) {
	t.Helper()
	seen := map[string]string{}
	for i := range 1 << 22 {
		name := "s" + strconv.FormatInt(int64(i), 36)
		h := nameHash(name)
		if other, ok := seen[h]; ok {
			return other, name
		}
		seen[h] = name
	}
	t.Fatal("no two names with the same hash")
	return "", ""
}

// TestServiceSelectsOnlyItsPod (attack 3): an edit user's Sandbox and a tenant's claim whose names
// have the same 32-bit name hash. Each headless Service selects its Sandbox's UID and its
// endpoints hold its own pod only; the seeds' hash label, the same on both pods, selects nothing.
func TestServiceSelectsOnlyItsPod(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kube, client := adminClients(t)
	ctx := context.Background()
	victim, attacker := collidingNames(t)
	t.Logf("%s and %s share the name hash %s", victim, attacker, nameHash(victim))
	tenant, editor := "tenant-"+randSuffix(5), "editor-"+randSuffix(5)
	grantTenant(t, ns, tenant)
	bindClusterRole(t, ns, editor, "edit")
	waitCanI(t, "create", "sandboxclaims.extensions.agents.x-k8s.io", "-n", ns, "--as="+tenant)
	waitCanI(t, "create", "sandboxes.agents.x-k8s.io", "-n", ns, "--as="+editor)
	applyYAML(t, ns, tenancyTemplates)

	kubectlAsStdin(t, "", fmt.Sprintf(`apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: %s}
spec:
  service: true
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest}]}}
`, victim), "create", "-n", ns, "-f", "-", "--as="+editor)
	kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, attacker, "plain"), "create", "-n", ns, "-f", "-", "--as="+tenant)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/"+victim, "sandboxclaim/"+attacker, "--timeout=90s")

	podIP := map[string]string{}
	for _, name := range []string{victim, attacker} {
		sb, err := client.AgentsV1beta1().Sandboxes(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := pod.Labels["agents.x-k8s.io/sandbox-name-hash"]; got != nameHash(victim) {
			t.Errorf("pod %s hash label = %q, want the shared %s (kept for compatibility)", name, got, nameHash(victim))
		}
		selector := map[string]string{"agents.x-k8s.io/sandbox-uid": string(sb.UID)}
		svc, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(svc.Spec.Selector, selector) {
			t.Errorf("Service %s selector = %v, want %v", name, svc.Spec.Selector, selector)
		}
		if want := "agents.x-k8s.io/sandbox-uid=" + string(sb.UID); sb.Status.LabelSelector != want {
			t.Errorf("Sandbox %s status.selector = %q, want %q", name, sb.Status.LabelSelector, want)
		}
		podIP[name] = pod.Status.PodIP
	}
	if podIP[victim] == "" || podIP[victim] == podIP[attacker] {
		t.Fatalf("pod IPs %v: want two distinct IPs", podIP)
	}
	for _, name := range []string{victim, attacker} {
		eventually(t, waitTimeout, "the endpoints of Service "+name+" to be its own pod only", func() (bool, string) {
			got := kubectl(t, "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name="+name,
				"-o", "jsonpath={.items[*].endpoints[*].addresses[*]}")
			return strings.Join(strings.Fields(got), " ") == podIP[name], got
		})
	}
}

// TestNamespaceRecreatedWhileServerAway (attack 8): a namespace is deleted and created again
// under the same name while sandbox-apiserver is stopped. When it is back, the objects of the old
// namespace are deleted, no pod is ever made for them in the new one, and the new namespace's
// own sandboxes work and record its UID.
func TestNamespaceRecreatedWhileServerAway(t *testing.T) {
	requirePlaneComponents(t, "sandbox-apiserver")
	ns := newNamespace(t)
	restorePlane(t)
	kube, client := adminClients(t)
	ctx := context.Background()

	applyYAML(t, ns, fmt.Sprintf(faultTemplate, "agent")+"---\n"+fmt.Sprintf(faultSandbox, "old")+"---\n"+fmt.Sprintf(faultClaim, "claim", "agent"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/old", "sandboxclaim/claim", "--timeout=90s")
	oldNamespace, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonpath(t, ns, `{.metadata.annotations.agents\.x-k8s\.io/namespace-uid}`, "sandbox", "old"); got != string(oldNamespace.UID) {
		t.Fatalf("sandbox old records namespace UID %q, want %q", got, oldNamespace.UID)
	}
	left := ourObjectUIDs(t, client, ns)

	localUpT(t, 2*time.Minute, "stop-sandbox-apiserver")
	// The cluster empties the namespace of what it can see; our kinds it cannot see now, so the
	// namespace is force-finalized, as an admin would to get rid of it.
	kubectl(t, "delete", "namespace", ns, "--wait=false")
	eventually(t, 2*time.Minute, "the pods of "+ns+" to be deleted", func() (bool, string) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items))
	})
	terminating, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	terminating.Spec.Finalizers = nil
	if _, err := kube.CoreV1().Namespaces().Finalize(ctx, terminating, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "wait", "--for=delete", "namespace/"+ns, "--timeout=60s")
	kubectl(t, "create", "namespace", ns)
	recreated, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if recreated.UID == oldNamespace.UID {
		t.Fatalf("the recreated namespace has the old UID %s", recreated.UID)
	}
	pods, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: recreated.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer pods.Stop()

	localUpT(t, 5*time.Minute, "start-sandbox-apiserver")
	waitSandboxesServed(t, ns)
	eventually(t, 2*time.Minute, "the old namespace's objects to be deleted", func() (bool, string) {
		now := ourObjectUIDs(t, client, ns)
		var revived []string
		for k, uid := range left {
			if now[k] == uid {
				revived = append(revived, k)
			}
		}
		return len(revived) == 0, strings.Join(revived, ", ")
	})

	// The new namespace's own sandbox works, records the new UID, and is the only pod there.
	applyYAML(t, ns, fmt.Sprintf(faultSandbox, "fresh"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/fresh", "--timeout=90s")
	if got := jsonpath(t, ns, `{.metadata.annotations.agents\.x-k8s\.io/namespace-uid}`, "sandbox", "fresh"); got != string(recreated.UID) {
		t.Errorf("sandbox fresh records namespace UID %q, want %q", got, recreated.UID)
	}
	for {
		select {
		case ev, ok := <-pods.ResultChan():
			if !ok {
				t.Fatal("the pod watch ended early")
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type != watch.Added {
				continue
			}
			if pod.Name != "fresh" {
				t.Fatalf("pod %s was made in the new namespace for an object of the old one", pod.Name)
			}
			return
		case <-time.After(waitTimeout):
			t.Fatal("no pod event for sandbox fresh")
		}
	}
}

// TestClaimReportsPodQuota (item 5, the controller side): a claim whose pod a pod ResourceQuota
// refuses says so: its sandbox, and the claim mirroring it, are Ready=False PodCreationForbidden
// with the cluster's "exceeded quota" message.
func TestClaimReportsPodQuota(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	tenant := "tenant-" + randSuffix(5)
	grantTenant(t, ns, tenant)
	waitCanI(t, "create", "sandboxclaims.extensions.agents.x-k8s.io", "-n", ns, "--as="+tenant)
	applyYAML(t, ns, tenancyTemplates+`---
apiVersion: v1
kind: ResourceQuota
metadata: {name: no-pods}
spec:
  hard: {pods: "0"}
`)
	// Enforced once the quota controller has computed its usage.
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.used.pods}=0", "resourcequota/no-pods", "--timeout=60s")
	kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, "over", "plain"), "create", "-n", ns, "-f", "-", "--as="+tenant)
	// The claim first: its sandbox exists once the claim reports it.
	for _, ref := range []string{"sandboxclaim/over", "sandbox/over"} {
		kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=PodCreationForbidden`, ref, "--timeout=60s")
		msg := kubectl(t, "get", "-n", ns, ref, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
		expectContains(t, ref+" Ready message", msg, "exceeded quota", "no-pods")
	}
}

// TestClaimGetsOnlyPoolMembers (attack 2, the controller side): an edit user's Sandbox dressed up
// as a warm member (the pool and template-ref labels, no controller) is never handed to a tenant's
// claim: the claim gets a cold sandbox of its own. A controller reference to the pool with a
// made-up UID is refused the same way (unit tests; in a cluster the garbage collector removes such
// a Sandbox). The API may refuse the marks outright; then the attack fails there.
func TestClaimGetsOnlyPoolMembers(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	_, client := adminClients(t)
	ctx := context.Background()
	tenant, editor := "tenant-"+randSuffix(5), "editor-"+randSuffix(5)
	grantTenant(t, ns, tenant)
	bindClusterRole(t, ns, editor, "edit")
	waitCanI(t, "create", "sandboxclaims.extensions.agents.x-k8s.io", "-n", ns, "--as="+tenant)
	waitCanI(t, "create", "sandboxes.agents.x-k8s.io", "-n", ns, "--as="+editor)
	// A pool of the template with no members: the only candidate is the dressed-up one.
	applyYAML(t, ns, tenancyTemplates+"---\n"+fmt.Sprintf(faultPool, "pool", 0, "plain"))

	_, stderr, err := kubectlWith(t, kubectlOptions{stdin: fmt.Sprintf(`apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: planted
  labels: {agents.x-k8s.io/warm-pool-sandbox: "%s", agents.x-k8s.io/sandbox-template-ref-hash: "%s"}
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/attacker:latest}]}}
`, nameHash("pool"), nameHash("plain"))}, "create", "-n", ns, "-f", "-", "--as="+editor)
	if err != nil {
		// Refused at the API (403 or 422) is the attack failing too; anything else is not.
		if low := strings.ToLower(stderr); !strings.Contains(low, "forbidden") && !strings.Contains(low, "invalid") {
			t.Fatalf("creating the dressed-up sandbox failed otherwise: %v\n%s", err, stderr)
		}
		return
	}
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/planted", "--timeout=90s")

	kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, "mine", "plain"), "create", "-n", ns, "-f", "-", "--as="+tenant)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/mine", "--timeout=90s")
	if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "mine"); got != "mine" {
		t.Errorf("the claim got sandbox %q, want its own cold sandbox mine", got)
	}
	sb, err := client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "planted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(sb); ref != nil {
		t.Errorf("sandbox planted is now controlled by %s %s", ref.Kind, ref.Name)
	}
}
