// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	restclient "k8s.io/client-go/rest"
)

// The second round of tenancy attacks (SECURITY.md, attacks 11 to 16): what the claim volume
// claim templates, the proxy and wake on demand let a tenant try.

// volumeTemplate lets claims add volumes (Allowed); its own volume claim template uses the class
// "standard", and its pod runs an init container from a configMap volume "setup".
const volumeTemplate = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: vols}
spec:
  volumeClaimTemplatesPolicy: Allowed
  podTemplate:
    spec:
      initContainers: [{name: setup, image: busybox, command: [sh, /setup/run.sh], volumeMounts: [{name: setup, mountPath: /setup}]}]
      containers: [{name: agent, image: ghcr.io/example/agent:v1}]
      volumes: [{name: setup, configMap: {name: setup-script}}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: standard
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// openedVolumeTemplate is volumeTemplate with claim volumes' dataSource opened: a platform that
// lets its users start from a dataset they name.
const openedVolumeTemplate = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: vols-datasets}
spec:
  volumeClaimTemplatesPolicy: Allowed
  claimVolumeClaimTemplates: {allowedFields: [dataSource], maxCount: 2}
  podTemplate:
    spec:
      containers: [{name: agent, image: ghcr.io/example/agent:v1}]
`

// claimWith is a claim of template with the given spec lines (indented by two).
func claimWith(name, template, spec string) string {
	return fmt.Sprintf("apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: %s}\nspec:\n  sandboxTemplateRef: {name: %s}\n  warmpool: none\n%s",
		name, template, spec)
}

// claimVolume is one volume claim template of a claim, with extra spec lines.
func claimVolume(name, extra string) string {
	return fmt.Sprintf("  - metadata: {name: %s}\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}\n%s", name, extra)
}

// TestClaimVolumesAreNewEmptyStorage (attacks 11 to 13): a claim-only tenant cannot clone or
// restore another's PVC, bind a PersistentVolume by name or selector, pick a storage class the
// template does not use, replace the template pod's configMap volume, or send hundreds of
// volumes; the victim PVC and ConfigMap stay as they were and a plain new volume still works. A
// template that opens dataSource (spec.claimVolumeClaimTemplates) accepts a clone, and only that.
func TestClaimVolumesAreNewEmptyStorage(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	tenant := "vol-tenant-" + randSuffix(5)
	kc := newUser(t, tenant)
	grantTenant(t, ns, tenant)
	applyYAML(t, ns, volumeTemplate+"---\n"+openedVolumeTemplate+`---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: payroll-db}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: dataset}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: setup-script}
data: {run.sh: "echo setting up"}
`)
	// The plane's volume provisioner binds both PVCs on its own: the victim is compared from
	// then on, so that only the attacks, not its binding, could change it.
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Bound", "pvc/payroll-db", "pvc/dataset", "--timeout=60s")
	kube, _ := adminClients(t)
	before := victimState(t, kube, ns, "pvc", "payroll-db")
	script := func() string {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "setup-script", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(cm.UID) + cm.ResourceVersion + cm.Data["run.sh"]
	}
	scriptBefore := script()
	waitCanI(t, "use", "sandboxtemplates/vols", "-n", ns, "--as="+tenant)

	many := ""
	for i := range 300 {
		many += claimVolume(fmt.Sprintf("v%d", i), "")
	}
	for _, tc := range []struct {
		what, volumes string
		want          []string
	}{
		{"a clone of another's PVC", claimVolume("copy", "      dataSource: {kind: PersistentVolumeClaim, name: payroll-db}\n"),
			[]string{"spec.volumeClaimTemplates[0].spec.dataSource: Forbidden", "new, empty storage"}},
		{"a restore from a snapshot", claimVolume("copy", "      dataSourceRef: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: payroll-nightly}\n"),
			[]string{"spec.volumeClaimTemplates[0].spec.dataSourceRef: Forbidden"}},
		{"a PersistentVolume by name", claimVolume("bound", "      volumeName: pv-payroll\n"),
			[]string{"spec.volumeClaimTemplates[0].spec.volumeName: Forbidden"}},
		{"a PersistentVolume by selector", claimVolume("bound", "      selector: {matchLabels: {team: payroll}}\n"),
			[]string{"spec.volumeClaimTemplates[0].spec.selector: Forbidden"}},
		{"a class the template does not use", claimVolume("fast", "      storageClassName: premium-unmetered\n"),
			[]string{"spec.volumeClaimTemplates[0].spec.storageClassName: Forbidden", `"standard"`}},
		{"the template pod's configMap volume", claimVolume("setup", ""),
			[]string{"spec.volumeClaimTemplates[0].metadata.name: Forbidden", "the template's pod declares a volume"}},
		{"hundreds of volumes", many, []string{"spec.volumeClaimTemplates: Too many: 300: must have at most 64 items"}},
	} {
		_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claimWith("bad", "vols", "  volumeClaimTemplates:\n"+tc.volumes)},
			"create", "-n", ns, "-f", "-")
		expectFailure(t, tc.what, stderr, err, append([]string{`The SandboxClaim "bad" is invalid`}, tc.want...)...)
	}
	if _, _, err := kubectlErr(t, "get", "sandboxclaim", "bad", "-n", ns); err == nil {
		t.Fatalf("a refused claim was stored")
	}

	// A new, empty volume of the template's class is what claims are for.
	kubectlAsStdin(t, kc, claimWith("ok", "vols", "  volumeClaimTemplates:\n"+claimVolume("scratch", "      storageClassName: standard\n")),
		"create", "-n", ns, "-f", "-")
	eventually(t, waitTimeout, "the claim's sandbox with its scratch volume", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "sandbox", "ok", "-n", ns, "-o", "jsonpath={.spec.volumeClaimTemplates[*].metadata.name}")
		return out == "data scratch", out
	})

	// What a template opens: a clone of a dataset, within its bound of two volumes.
	expectContains(t, "kubectl explain", kubectl(t, "explain", "sandboxtemplate.spec.claimVolumeClaimTemplates"), "allowedFields", "maxStorage")
	waitCanI(t, "use", "sandboxtemplates/vols-datasets", "-n", ns, "--as="+tenant)
	clone := claimVolume("dataset", "      dataSource: {kind: PersistentVolumeClaim, name: dataset}\n")
	_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claimWith("bad", "vols-datasets",
		"  volumeClaimTemplates:\n"+clone+claimVolume("other", "      volumeName: pv-payroll\n")+claimVolume("third", ""))}, "create", "-n", ns, "-f", "-")
	expectFailure(t, "more than the template opens", stderr, err, "spec.volumeClaimTemplates[1].spec.volumeName: Forbidden",
		"spec.volumeClaimTemplates: Too many: 3: must have at most 2 items")
	kubectlAsStdin(t, kc, claimWith("clone", "vols-datasets", "  volumeClaimTemplates:\n"+clone), "create", "-n", ns, "-f", "-")
	eventually(t, waitTimeout, "the clone claim's sandbox with its dataset volume", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "sandbox", "clone", "-n", ns, "-o", "jsonpath={.spec.volumeClaimTemplates[*].spec.dataSource.name}")
		return out == "dataset", out
	})

	if after := victimState(t, kube, ns, "pvc", "payroll-db"); after != before {
		t.Errorf("the victim PVC changed:\nbefore %s\nafter  %s", before, after)
	}
	if after := script(); after != scriptBefore {
		t.Errorf("the template's setup script changed: %q, was %q", after, scriptBefore)
	}
}

// TestNetworkAttachmentIsTheTemplates (attack 14): a claim-only tenant cannot attach its pod to
// another network, pin its address or take a cloud identity by pod metadata; a template that
// lists the key opens it.
func TestNetworkAttachmentIsTheTemplates(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	tenant := "net-tenant-" + randSuffix(5)
	kc := newUser(t, tenant)
	grantTenant(t, ns, tenant)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "t", "Disallowed", "v1")+`---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: lab}
spec:
  allowedClaimPodMetadata: {annotations: [k8s.v1.cni.cncf.io/networks]}
  podTemplate:
    spec:
      containers: [{name: agent, image: ghcr.io/example/agent:v1}]
`)
	waitCanI(t, "use", "sandboxtemplates/t", "-n", ns, "--as="+tenant)
	for _, tc := range []struct{ what, meta, field string }{
		{"a Multus network", "annotations: {k8s.v1.cni.cncf.io/networks: kube-system/host-net}", "annotations[k8s.v1.cni.cncf.io/networks]"},
		{"a Calico address", `annotations: {cni.projectcalico.org/ipAddrs: '["10.0.0.10"]'}`, "annotations[cni.projectcalico.org/ipAddrs]"},
		{"a Cilium policy bypass", "annotations: {policy.cilium.io/proxy-visibility: '<Egress/53/UDP/DNS>'}", "annotations[policy.cilium.io/proxy-visibility]"},
		{"an AWS identity", "annotations: {eks.amazonaws.com/role-arn: 'arn:aws:iam::1:role/admin'}", "annotations[eks.amazonaws.com/role-arn]"},
		{"an Azure workload identity", "labels: {azure.workload.identity/use: 'true'}", "labels[azure.workload.identity/use]"},
	} {
		_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claimWith("bad", "t", "  additionalPodMetadata: {"+tc.meta+"}\n")},
			"create", "-n", ns, "-f", "-")
		expectFailure(t, tc.what, stderr, err, `The SandboxClaim "bad" is invalid`, "spec.additionalPodMetadata."+tc.field+": Forbidden")
	}
	kubectlAsStdin(t, kc, claimWith("lab", "lab", "  additionalPodMetadata: {annotations: {k8s.v1.cni.cncf.io/networks: lab-net}}\n"),
		"create", "-n", ns, "-f", "-")
	eventually(t, waitTimeout, "the lab claim's pod annotation", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "sandbox", "lab", "-n", ns, "-o", `jsonpath={.spec.podTemplate.metadata.annotations.k8s\.v1\.cni\.cncf\.io/networks}`)
		return out == "lab-net", out
	})
}

// TestForgedOwnerReferenceOfAnotherVersion (attack 15): an edit user who reads a pool's UID
// cannot make a Sandbox controlled by it under another apiVersion (another version, a bare v1, a
// misspelled group); the pool and its members are unchanged.
func TestForgedOwnerReferenceOfAnotherVersion(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	editor := "owner-editor-" + randSuffix(5)
	kc := newUser(t, editor)
	bindClusterRole(t, ns, editor, "edit")
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "t", "Disallowed", "v1")+`---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: pool}
spec: {replicas: 1, sandboxTemplateRef: {name: t}}
`)
	eventually(t, waitTimeout, "the pool's member", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "sandboxwarmpool", "pool", "-n", ns, "-o", "jsonpath={.status.readyReplicas}")
		return out == "1", out
	})
	state := func() string {
		return kubectl(t, "get", "sandboxwarmpool", "pool", "-n", ns, "-o", "jsonpath={.metadata.uid} {.spec} {.status.replicas}") +
			" " + kubectl(t, "get", "sandboxes", "-n", ns, "-o", "jsonpath={.items[*].metadata.uid}")
	}
	before := state()
	poolUID := jsonpath(t, ns, "{.metadata.uid}", "sandboxwarmpool", "pool")
	waitCanI(t, "create", "sandboxes", "-n", ns, "--as="+editor)
	for _, apiVersion := range []string{"extensions.agents.x-k8s.io/v1alpha1", "extensions.agents.x-k8s.io/v2", "v1", "extension.agents.x-k8s.io/v1beta1"} {
		forged := fmt.Sprintf(`apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: forged
  ownerReferences: [{apiVersion: %s, kind: SandboxWarmPool, name: pool, uid: %s, controller: true}]
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/evil:v1}]}}
`, apiVersion, poolUID)
		_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: forged}, "create", "-n", ns, "-f", "-")
		expectFailure(t, "a controller reference of "+apiVersion, stderr, err, "metadata.ownerReferences[0]: Forbidden", "reserved for the sandbox-apiserver controllers")
	}
	if _, _, err := kubectlErr(t, "get", "sandbox", "forged", "-n", ns); err == nil {
		t.Fatalf("a forged Sandbox was stored")
	}
	if after := state(); after != before {
		t.Errorf("the pool changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestProxyIdentityHeadersAreTheProxys (attack 16): whatever identity and forwarding headers an
// edit user sends, in whatever spelling, and whatever its Connection header lists, the sandbox's
// HTTP server sees only the identity the proxy set.
func TestProxyIdentityHeadersAreTheProxys(t *testing.T) {
	t.Parallel()
	ns := newHostNetworkNamespace(t)
	proc := startSandboxProcess(t)
	applyYAML(t, ns, fmt.Sprintf("apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: {name: web}\nspec:\n  podTemplate: {spec: %s}\n", proxyPodSpec(proc.port)))
	editor := "hdr-editor-" + randSuffix(5)
	kc := newUser(t, editor, "hdr-team")
	bindClusterRole(t, ns, editor, "edit")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/web", "--timeout=90s")
	waitCanI(t, "create", "sandboxes/proxy", "-n", ns, "--as="+editor)

	// Impersonate-User itself is kube-apiserver's (a 403 for a user who may not impersonate); its
	// underscore spelling passes kube-apiserver and must not reach the sandbox either.
	forged := http.Header{"Connection": {"X-Sandbox-User, X-Sandbox-Group, keep-alive"}}
	for _, name := range []string{
		"X-Sandbox-User", "X-Sandbox-Group", "X_Sandbox_User", "x-remote-user", "X_Remote_User", "X-Remote-Group",
		"X-Forwarded-User", "X_Forwarded_User", "X-Forwarded-Email", "X-Forwarded-Groups", "X-Forwarded-Access-Token",
		"X-Forwarded-For", "X-Forwarded-Host", "Forwarded", "X-Real-Ip", "X_Real_IP", "X-Auth-Request-User",
		"X_Auth_Request_Email", "Remote-User", "REMOTE_USER", "X-Client-Cert", "Ssl-Client-Cert", "X-Original-Url",
		"X-Webauth-User", "Impersonate_User",
	} {
		forged[name] = []string{"root"}
	}
	// HTTP/1.1: Go's HTTP/2 client refuses to send a Connection header at all, a hostile client's
	// HTTP/1.1 request carries it to kube-apiserver.
	cfg := restConfig(t, kc)
	cfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
	code, body, _ := proxyCall(t, cfg, "GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/"+ns+"/sandboxes/web/proxy/echo", "", forged)
	if code != http.StatusOK {
		t.Fatalf("GET through the proxy: %d %s", code, body)
	}
	proc.mu.Lock()
	seen := proc.seen[len(proc.seen)-1].Header.Clone()
	proc.mu.Unlock()
	if got := seen.Values("X-Sandbox-User"); len(got) != 1 || got[0] != editor {
		t.Errorf("the sandbox saw X-Sandbox-User %q; want only %q", got, editor)
	}
	if got := strings.Join(seen.Values("X-Sandbox-Group"), ","); !strings.Contains(got, "hdr-team") {
		t.Errorf("the sandbox saw groups %q; want the editor's", got)
	}
	for name, values := range seen {
		for _, v := range values {
			if v == "root" {
				t.Errorf("the sandbox saw the client's %s: %s", name, v)
			}
		}
	}
}

// TestWaitersCannotExhaustTheServer (attack 17): an edit user sends 200 concurrent proxy requests
// to a sandbox whose pod never becomes Ready. They share one watch; past the bound per sandbox
// they get a 429 with Retry-After at once; meanwhile the server answers other requests (a list
// of sandboxes, a ConfigMap create through kube-apiserver) without waiting behind them.
func TestWaitersCannotExhaustTheServer(t *testing.T) {
	ns := newNamespace(t)
	editor := "dos-editor-" + randSuffix(5)
	kc := newUser(t, editor)
	bindClusterRole(t, ns, editor, "edit")
	// No node has the label, so the pod stays Pending and the sandbox never Ready.
	applyYAML(t, ns, `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: stuck}
spec:
  podTemplate:
    spec:
      nodeSelector: {sandbox.example/nowhere: "true"}
      containers: [{name: agent, image: ghcr.io/example/agent:v1, ports: [{name: http, containerPort: 8080}]}]
`)
	waitCanI(t, "create", "sandboxes/proxy", "-n", ns, "--as="+editor)
	cfg := restConfig(t, kc)
	transport, err := restclient.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const requests = 200
	var mu sync.Mutex
	codes := map[int]int{}
	retryAfter := ""
	var wg sync.WaitGroup
	url := strings.TrimSuffix(cfg.Host, "/") + "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/stuck/proxy/"
	for range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			resp, err := client.Do(req)
			code := 0
			if err == nil {
				code = resp.StatusCode
				if code == http.StatusTooManyRequests {
					mu.Lock()
					retryAfter = resp.Header.Get("Retry-After")
					mu.Unlock()
				}
				resp.Body.Close()
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	eventually(t, waitTimeout, "the requests past the bound to be refused", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return codes[http.StatusTooManyRequests] >= requests-64, fmt.Sprint(codes)
	})

	// The server still answers everyone else while the others wait: not queued behind them (they
	// hang for the 30 s wake timeout), with room for a loaded two-core machine.
	const answerWithin = 5 * time.Second
	kube, sandboxes := adminClients(t)
	for i := range 5 {
		start := time.Now()
		if _, err := sandboxes.AgentsV1beta1().Sandboxes(ns).List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > answerWithin {
			t.Errorf("listing sandboxes took %s while proxy requests wait", d)
		}
		start = time.Now()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("still-here-%d", i)}}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > answerWithin {
			t.Errorf("creating a ConfigMap took %s while proxy requests wait", d)
		}
	}
	cancel()
	wg.Wait()
	if codes[http.StatusTooManyRequests] < requests-64 || retryAfter == "" {
		t.Errorf("answers %v, Retry-After %q; want at least %d 429s with Retry-After", codes, retryAfter, requests-64)
	}
	for code := range codes {
		if code != 0 && code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable {
			t.Errorf("answers %v; want only 429 and (for those that waited) 503 or a cancelled request", codes)
		}
	}
}
