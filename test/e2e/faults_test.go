// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

// The fault tests disrupt one component of the local control plane each: they kill, stop or
// restart it through hack/local-up.sh and check what users and the controllers see meanwhile and
// afterwards. They are not parallel (the parallel tests of the package run after them), and each
// one restores the plane in a cleanup, also when it fails half-way. Every test writes what it
// measured to _output/reliability/<test>.json; RELIABILITY.md sums them up.

// The fault tests' pods go to the kwok nodes (nodeSelector and toleration of their taint): they
// test the server and the controllers, not containers, and a burst of hundreds of pods fits there.

// faultTemplate is a SandboxTemplate (%s: its name) whose pods kwok starts at once.
const faultTemplate = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  podTemplate:
    spec:
      nodeSelector: {type: kwok}
      tolerations: [{key: sandbox-apiserver.dev/kwok, operator: Exists, effect: NoSchedule}]
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
`

// faultPool is a SandboxWarmPool (%s: name, %d: replicas, %s: template).
const faultPool = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: %s}
spec:
  replicas: %d
  sandboxTemplateRef: {name: %s}
`

// faultSandbox is a Sandbox (%s: its name) with one pod and nothing else.
const faultSandbox = `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: %s}
spec:
  podTemplate:
    spec:
      nodeSelector: {type: kwok}
      tolerations: [{key: sandbox-apiserver.dev/kwok, operator: Exists, effect: NoSchedule}]
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
`

// faultFullSandbox is a Sandbox (%s: its name) with a pod, a headless Service and a PVC.
const faultFullSandbox = `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: %s}
spec:
  service: true
  podTemplate:
    spec:
      nodeSelector: {type: kwok}
      tolerations: [{key: sandbox-apiserver.dev/kwok, operator: Exists, effect: NoSchedule}]
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
        volumeMounts: [{name: work, mountPath: /work}]
  volumeClaimTemplates:
  - metadata: {name: work}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// faultClaim is a SandboxClaim (%s: name, %s: template).
const faultClaim = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: %s}
spec:
  sandboxTemplateRef: {name: %s}
`

// requirePlaneComponents skips the test unless hack/local-up.sh of this checkout runs every one
// of components, so that it can stop and start them.
func requirePlaneComponents(t *testing.T, components ...string) {
	t.Helper()
	running := componentsRunning()
	for _, c := range components {
		if !running[c] {
			t.Skipf("%s is not run by hack/local-up.sh in this checkout; cannot disrupt it", c)
		}
	}
}

// restorePlane makes sure the whole local control plane runs before the test disrupts it, and
// registers a cleanup that does the same afterwards: it starts whatever is down (hack/local-up.sh
// start leaves running components alone) and waits until the sandbox APIs answer and kubectl get
// sandboxes works. Call it after newNamespace, so that the cleanup runs before the namespace's.
func restorePlane(t *testing.T) {
	t.Helper()
	healPlane(t)
	t.Cleanup(func() { healPlane(t) })
}

func healPlane(t *testing.T) {
	t.Helper()
	running := componentsRunning()
	for _, c := range controlPlaneComponents {
		if !running[c] {
			t.Logf("restoring the control plane: %s is not running", c)
			localUpT(t, 5*time.Minute, "start")
			break
		}
	}
	if err := waitForSandboxAPIs(3 * time.Minute); err != nil {
		t.Fatalf("restoring the control plane: %v", err)
	}
	eventually(t, 2*time.Minute, "kubectl get sandboxes -A to work", func() (bool, string) {
		_, stderr, err := kubectlErr(t, "get", "sandboxes", "-A", "--request-timeout=10s")
		return err == nil, stderr
	})
}

// figures collects what a fault test measured and writes it, when the test ends, to
// _output/reliability/<test>.json with the test's outcome and duration.
type figures struct {
	mu     sync.Mutex
	values map[string]any
}

func newFigures(t *testing.T) *figures {
	t.Helper()
	f := &figures{values: map[string]any{}}
	start := time.Now()
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		doc := map[string]any{
			"test":     t.Name(),
			"passed":   !t.Failed(),
			"skipped":  t.Skipped(),
			"seconds":  seconds(time.Since(start)),
			"finished": time.Now().UTC().Format(time.RFC3339),
			"cpus":     runtime.NumCPU(),
			"figures":  f.values,
		}
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Errorf("encoding the figures: %v", err)
			return
		}
		dir := filepath.Join(repoRoot, "_output", "reliability")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("writing the figures: %v", err)
			return
		}
		file := filepath.Join(dir, t.Name()+".json")
		if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
			t.Errorf("writing the figures: %v", err)
			return
		}
		t.Logf("figures (%s):\n%s", strings.TrimPrefix(file, repoRoot+"/"), indent(string(data)))
	})
	return f
}

func (f *figures) set(key string, value any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[key] = value
}

// seconds rounds d to tenths of seconds, for the figures.
func seconds(d time.Duration) float64 {
	return float64(d.Round(100*time.Millisecond)) / float64(time.Second)
}

// faultClients returns the cluster's clientset and ours as the admin with a client-side timeout
// per request (0: none, for watches and informers) and a request rate limit.
func faultClients(t *testing.T, timeout time.Duration, qps float32) (kubernetes.Interface, versioned.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	cfg.QPS, cfg.Burst = qps, max(int(qps), 1)
	return kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg)
}

// cleanFailure classifies the error of a failed request. A clean failure is a 5xx status from a
// server or a timeout (the server's 504 or the client's own); anything else is not.
func cleanFailure(err error) (class string, clean bool) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return fmt.Sprintf("%d %s", s.Code, s.Reason), s.Code >= 500
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "client timeout", true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "client timeout", true
	}
	// Transport errors: without the URL (*url.Error) and the HTTP/2 stream number, so that
	// the same failure counts once.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return streamID.ReplaceAllString(err.Error(), "stream ID N"), false
}

var streamID = regexp.MustCompile(`stream ID \d+`)

// failureMessage is the message of a failed request's status, or its error text.
func failureMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// isReady says whether conditions hold Ready=True.
func isReady(conditions []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conditions, string(agentsv1beta1.SandboxConditionReady))
}

// controllerRefs returns the owner references of obj that are controllers.
func controllerRefs(obj metav1.Object) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			refs = append(refs, r)
		}
	}
	return refs
}

// pidOf returns the PID hack/local-up.sh recorded for a component.
func pidOf(t *testing.T, component string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "_output/local/pids", component+".pid"))
	if err != nil {
		t.Fatalf("PID of %s: %v", component, err)
	}
	return strings.TrimSpace(string(b))
}

// TestFaultKillDuringClaimBurst kills sandbox-apiserver with SIGKILL while 200 claims are being
// created against a warm pool of 50, and starts it again: every claim ends Ready with exactly one
// sandbox and that sandbox with exactly one pod, no sandbox has two controllers, every sandbox
// belongs to a claim or the pool, every sandbox pod to an existing sandbox, and the pool holds
// spec.replicas members again.
func TestFaultKillDuringClaimBurst(t *testing.T) {
	requirePlaneComponents(t, "sandbox-apiserver")
	const poolSize, claims, killAfter = 50, 200, 50
	fig := newFigures(t)
	ns := newNamespace(t)
	restorePlane(t)
	ctx := context.Background()
	// 50 requests a second spread the burst over about four seconds, so the kill after the first
	// 50 creations lands in its middle.
	kube, client := faultClients(t, 40*time.Second, 50)
	fig.set("claims", claims)
	fig.set("pool_replicas", poolSize)

	applyYAML(t, ns, fmt.Sprintf(faultTemplate, "agent")+"---\n"+fmt.Sprintf(faultPool, "pool", poolSize, "agent"))
	poolStart := time.Now()
	kubectl(t, "wait", "-n", ns, fmt.Sprintf("--for=jsonpath={.status.readyReplicas}=%d", poolSize), "sandboxwarmpool/pool", "--timeout=180s")
	fig.set("pool_ready_seconds", seconds(time.Since(poolStart)))

	// The burst: every claim is created by its own goroutine, retried while the server is away
	// (an AlreadyExists on a retry means an earlier attempt was stored before its answer was lost).
	var created atomic.Int32
	killNow := make(chan struct{})
	type outcome struct {
		attempts int
		failures []string
		messages []string
		err      error
	}
	outcomes := make([]outcome, claims)
	var wg sync.WaitGroup
	burstStart := time.Now()
	for i := range claims {
		wg.Go(func() {
			claim := &extensionsv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%03d", i)},
				Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "agent"}},
			}
			o := &outcomes[i]
			deadline := time.Now().Add(3 * time.Minute)
			for {
				o.attempts++
				_, err := client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
				if err == nil || (o.attempts > 1 && apierrors.IsAlreadyExists(err)) {
					if created.Add(1) == killAfter {
						close(killNow)
					}
					return
				}
				class, _ := cleanFailure(err)
				o.failures = append(o.failures, class)
				o.messages = append(o.messages, failureMessage(err))
				if time.Now().After(deadline) {
					o.err = err
					return
				}
				time.Sleep(250 * time.Millisecond) // the retry pace while the server is away
			}
		})
	}

	select {
	case <-killNow:
	case <-time.After(2 * time.Minute):
		t.Fatalf("only %d of %d claims created within 2m; not killing", created.Load(), claims)
	}
	localUpT(t, time.Minute, "kill-sandbox-apiserver")
	killedAt := time.Now()
	atKill := created.Load()
	fig.set("claims_created_before_kill", atKill)
	fig.set("kill_after_burst_start_seconds", seconds(killedAt.Sub(burstStart)))
	localUpT(t, 5*time.Minute, "start-sandbox-apiserver")
	restartedAt := time.Now()
	fig.set("server_down_seconds", seconds(restartedAt.Sub(killedAt)))
	wg.Wait()
	fig.set("burst_seconds", seconds(time.Since(burstStart)))

	failed, maxAttempts := 0, 0
	classes, examples := map[string]int{}, map[string]string{}
	for i, o := range outcomes {
		if o.err != nil {
			t.Errorf("claim-%03d not created after %d attempts: %v", i, o.attempts, o.err)
		}
		if len(o.failures) > 0 {
			failed++
		}
		maxAttempts = max(maxAttempts, o.attempts)
		for j, c := range o.failures {
			classes[c]++
			if _, ok := examples[c]; !ok {
				examples[c] = o.messages[j]
			}
		}
	}
	fig.set("creates_retried", failed)
	fig.set("create_failures_by_status", classes)
	fig.set("create_failure_examples", examples)
	if n := classes["403 Forbidden"]; n > 0 {
		// Not a failure of this test, which is about the end state; see RELIABILITY.md.
		t.Logf("BUG: %d creates got 403 Forbidden from the restarting server (%s): it serves requests "+
			"before it can authenticate the aggregator's front-proxy requests, and takes them for anonymous", n, examples["403 Forbidden"])
	}
	fig.set("create_max_attempts", maxAttempts)
	if atKill >= claims {
		t.Errorf("the kill came after the whole burst (%d claims created); it tests nothing", atKill)
	}
	if t.Failed() {
		return
	}

	// Everything settles: every claim Ready, the pool full of Ready members again.
	settle := func() (bool, string) {
		claimList, err := client.ExtensionsV1beta1().SandboxClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, c := range claimList.Items {
			if isReady(c.Status.Conditions) {
				ready++
			}
		}
		sbList, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		members, readyMembers := 0, 0
		for _, sb := range sbList.Items {
			if refs := controllerRefs(&sb); len(refs) == 1 && refs[0].Kind == "SandboxWarmPool" && sb.DeletionTimestamp == nil {
				members++
				if isReady(sb.Status.Conditions) {
					readyMembers++
				}
			}
		}
		state := fmt.Sprintf("%d of %d claims Ready; pool has %d members, %d Ready (want %d)", ready, claims, members, readyMembers, poolSize)
		return len(claimList.Items) == claims && ready == claims && members == poolSize && readyMembers == poolSize, state
	}
	eventually(t, 5*time.Minute, "every claim Ready and the pool refilled", settle)
	fig.set("settled_after_restart_seconds", seconds(time.Since(restartedAt)))

	warm := checkBurstOwnership(t, kube, client, ns, claims, poolSize)
	fig.set("claims_served_warm", warm)
	fig.set("claims_served_cold", claims-warm)
}

// checkBurstOwnership checks the end state of TestFaultKillDuringClaimBurst and returns how many
// claims got a warm sandbox.
func checkBurstOwnership(t *testing.T, kube kubernetes.Interface, client versioned.Interface, ns string, claims, poolSize int) (warm int) {
	t.Helper()
	ctx := context.Background()
	claimList, err := client.ExtensionsV1beta1().SandboxClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := client.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, "pool", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimByUID := map[types.UID]*extensionsv1beta1.SandboxClaim{}
	for i := range claimList.Items {
		claimByUID[claimList.Items[i].UID] = &claimList.Items[i]
	}
	sbList, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sandboxByUID := map[types.UID]*agentsv1beta1.Sandbox{}
	perClaim := map[types.UID][]string{}
	members := 0
	for i := range sbList.Items {
		sb := &sbList.Items[i]
		sandboxByUID[sb.UID] = sb
		refs := controllerRefs(sb)
		if len(refs) != 1 {
			t.Errorf("sandbox %s has %d controller references, want 1: %v", sb.Name, len(refs), sb.OwnerReferences)
			continue
		}
		ref := refs[0]
		switch {
		case ref.Kind == "SandboxClaim" && claimByUID[ref.UID] != nil:
			perClaim[ref.UID] = append(perClaim[ref.UID], sb.Name)
			if sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] != "" {
				warm++
			}
		case ref.Kind == "SandboxWarmPool" && ref.UID == pool.UID:
			members++
		default:
			t.Errorf("leaked sandbox %s: controlled by %s %s (%s), which is no claim or pool here", sb.Name, ref.Kind, ref.Name, ref.UID)
		}
	}
	for uid, c := range claimByUID {
		got := perClaim[uid]
		switch {
		case len(got) != 1:
			t.Errorf("claim %s controls %d sandboxes %v, want exactly 1", c.Name, len(got), got)
		case c.Status.SandboxStatus.Name != got[0]:
			t.Errorf("claim %s reports sandbox %q but controls %s", c.Name, c.Status.SandboxStatus.Name, got[0])
		}
	}
	if members != poolSize {
		t.Errorf("pool has %d members, want spec.replicas %d", members, poolSize)
	}

	// Pods: every sandbox has exactly one, every labelled pod belongs to an existing sandbox.
	// Pods of deleted sandboxes may still be going, so this converges rather than holds at once.
	eventually(t, 2*time.Minute, "one pod per sandbox and no leaked pod", func() (bool, string) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: agentsv1beta1.SandboxNameHashLabel})
		if err != nil {
			return false, err.Error()
		}
		perSandbox := map[types.UID]int{}
		var problems []string
		for _, p := range pods.Items {
			refs := controllerRefs(&p)
			if len(refs) != 1 || refs[0].Kind != "Sandbox" || sandboxByUID[refs[0].UID] == nil {
				problems = append(problems, fmt.Sprintf("pod %s belongs to no existing sandbox (%v)", p.Name, p.OwnerReferences))
				continue
			}
			perSandbox[refs[0].UID]++
		}
		for uid, sb := range sandboxByUID {
			if n := perSandbox[uid]; n != 1 {
				problems = append(problems, fmt.Sprintf("sandbox %s has %d pods", sb.Name, n))
			}
		}
		slices.Sort(problems)
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
		}
		return len(problems) == 0, fmt.Sprintf("%d pods: %s", len(pods.Items), strings.Join(problems, "; "))
	})
	return warm
}

// probe is one request made while the etcd of sandbox-apiserver is down.
type probe struct {
	Kind    string  `json:"kind"`
	Object  string  `json:"object,omitempty"` // the Sandbox a create makes
	Timeout float64 `json:"client_timeout_seconds"`
	Start   float64 `json:"start_seconds"` // after the outage began
	Took    float64 `json:"took_seconds"`
	Result  string  `json:"result"` // "ok" or how it failed
	Clean   bool    `json:"clean"`
}

// TestFaultSandboxEtcdOutage stops the etcd of sandbox-apiserver for 20 s. Meanwhile requests
// straight over HTTP (no client retries) are answered within a second with 503 and a Retry-After
// (the first within a second of the stop), none with a reset stream, and the server's /readyz
// fails its etcd check; client-go requests fail cleanly (a 5xx or a timeout) within their timeout
// and none hangs. The server serves again within 2 s of etcd's return. Afterwards a watching
// informer and the controllers resume (a Sandbox and a claim created after the restart become
// Ready) and every object made before is there with the same UID.
func TestFaultSandboxEtcdOutage(t *testing.T) {
	requirePlaneComponents(t, "sandbox-etcd", "sandbox-apiserver")
	const outage = 20 * time.Second
	const shortTimeout, longTimeout = 8 * time.Second, 40 * time.Second
	fig := newFigures(t)
	ns := newNamespace(t)
	restorePlane(t)
	ctx := context.Background()
	_, client := faultClients(t, longTimeout, 50)
	_, shortClient := faultClients(t, shortTimeout, 50)
	_, watchClient := faultClients(t, 0, 50)
	fig.set("outage_seconds", seconds(outage))

	applyYAML(t, ns, fmt.Sprintf(faultTemplate, "agent")+"---\n"+fmt.Sprintf(faultPool, "pool", 2, "agent")+"---\n"+
		fmt.Sprintf(faultSandbox, "before")+"---\n"+fmt.Sprintf(faultClaim, "claim-before", "agent"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/before", "sandboxclaim/claim-before", "--timeout=120s")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.readyReplicas}=2", "sandboxwarmpool/pool", "--timeout=120s")
	before := ourObjectUIDs(t, client, ns)

	// An informer (list, then watch, relisting when it has to) started before the outage, as the
	// controllers and kubectl users with --watch rely on; and a plain watch, for the figures.
	var seenMu sync.Mutex
	seen := map[string]time.Time{}
	var watchErrors atomic.Int32
	factory := externalversions.NewSharedInformerFactoryWithOptions(watchClient, 0, externalversions.WithNamespace(ns))
	informer := factory.Agents().V1beta1().Sandboxes().Informer()
	if err := informer.SetWatchErrorHandler(func(*cache.Reflector, error) { watchErrors.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if sb, ok := obj.(*agentsv1beta1.Sandbox); ok {
			seenMu.Lock()
			seen[sb.Name] = time.Now()
			seenMu.Unlock()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	informerCtx, stopInformer := context.WithCancel(ctx)
	t.Cleanup(func() { stopInformer(); factory.Shutdown() })
	factory.Start(informerCtx.Done())
	if !cache.WaitForCacheSync(informerCtx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	list, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := watchClient.AgentsV1beta1().Sandboxes(ns).Watch(informerCtx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	plainDone := make(chan string, 1)
	go func() {
		for ev := range plain.ResultChan() {
			if sb, ok := ev.Object.(*agentsv1beta1.Sandbox); ok && ev.Type == watch.Added && sb.Name == "after" {
				plainDone <- "delivered the Sandbox created after the outage"
				return
			}
			if ev.Type == watch.Error {
				plainDone <- fmt.Sprintf("ended with an error event: %v", apierrors.FromObject(ev.Object))
				return
			}
		}
		plainDone <- "closed by the server"
	}()
	t.Cleanup(plain.Stop)

	stopCalled := time.Now()
	localUpT(t, 2*time.Minute, "stop-sandbox-etcd")
	down := time.Now()
	// etcd closes its client port at once on SIGTERM but may take seconds to exit: the server
	// sees the outage from the start of that.
	fig.set("etcd_stop_took_seconds", seconds(down.Sub(stopCalled)))

	// Requests during the outage. Short ones (8 s client timeout) are made one after the other
	// while they can end before etcd returns: all of them must fail cleanly. Long ones (40 s) are
	// made once at the start: each must return within its timeout, failing cleanly or succeeding
	// after etcd is back.
	kinds := map[string]func(context.Context, versioned.Interface, int) error{
		"list sandboxes": func(ctx context.Context, c versioned.Interface, _ int) error {
			_, err := c.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
			return err
		},
		"get sandbox": func(ctx context.Context, c versioned.Interface, _ int) error {
			_, err := c.AgentsV1beta1().Sandboxes(ns).Get(ctx, "before", metav1.GetOptions{})
			return err
		},
		"create sandbox": func(ctx context.Context, c versioned.Interface, i int) error {
			sb := &agentsv1beta1.Sandbox{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("during-%d", i)},
				Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}},
				}}},
			}
			_, err := c.AgentsV1beta1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
			return err
		},
		"patch claim": func(ctx context.Context, c versioned.Interface, i int) error {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e/during":"%d"}}}`, i)
			_, err := c.ExtensionsV1beta1().SandboxClaims(ns).Patch(ctx, "claim-before", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		},
	}
	var probesMu sync.Mutex
	var probes []probe
	run := func(kind string, c versioned.Interface, timeout time.Duration, i int) probe {
		start := time.Now()
		err := kinds[kind](ctx, c, i)
		p := probe{Kind: kind, Timeout: seconds(timeout), Start: seconds(start.Sub(down)), Took: seconds(time.Since(start)), Result: "ok", Clean: true}
		if kind == "create sandbox" {
			p.Object = fmt.Sprintf("during-%d", i)
		}
		if err != nil {
			p.Result, p.Clean = cleanFailure(err)
		}
		probesMu.Lock()
		probes = append(probes, p)
		probesMu.Unlock()
		return p
	}
	var wg sync.WaitGroup
	var longProbes []probe
	var longMu sync.Mutex
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		wg.Go(func() {
			p := run(kind, client, longTimeout, 1000)
			longMu.Lock()
			longProbes = append(longProbes, p)
			longMu.Unlock()
		})
		wg.Go(func() {
			for i := 0; time.Since(down)+shortTimeout+2*time.Second < outage; i++ {
				run(kind, shortClient, shortTimeout, i)
			}
		})
	}

	// Meanwhile, HTTP requests without retries of each kind, one round after the other, and the
	// server's /readyz after each round, until a second before etcd returns.
	call := rawCaller(t, ns)
	var raw []rawCall
	var readyz []readyzCheck
	for i := 0; time.Since(down) < outage-time.Second; i++ {
		for _, kind := range rawKinds {
			raw = append(raw, call(kind, i, down))
		}
		readyz = append(readyz, checkReadyz(t))
		time.Sleep(100 * time.Millisecond) // the pace of the rounds: about a hundred in the outage
	}

	time.Sleep(time.Until(down.Add(outage))) // the rest of the outage
	startCalled := time.Now()
	localUpT(t, 2*time.Minute, "start-sandbox-etcd")
	up := time.Now()
	fig.set("etcd_stopped_seconds", seconds(up.Sub(down)))
	fig.set("etcd_start_took_seconds", seconds(up.Sub(startCalled)))

	// The server serves again by itself, within 2 s of etcd's return (of local-up.sh's start
	// returning: etcd answered its health check).
	var back, readyzBack time.Duration
	for back == 0 || readyzBack == 0 {
		if back == 0 && call("get sandbox", 0, down).Status == 200 && call("list sandboxes", 0, down).Status == 200 {
			back = time.Since(up)
		}
		if readyzBack == 0 && checkReadyz(t).Status == 200 {
			readyzBack = time.Since(up)
		}
		if time.Since(up) > time.Minute {
			t.Fatalf("sandbox-apiserver does not serve again a minute after etcd's return (API back: %v, /readyz back: %v)", back > 0, readyzBack > 0)
		}
		time.Sleep(50 * time.Millisecond) // the pace of the checks, well under the 2 s allowed
	}
	fig.set("api_back_after_etcd_start_seconds", hundredths(back))
	fig.set("readyz_back_after_etcd_start_seconds", hundredths(readyzBack))
	if back > 2*time.Second {
		t.Errorf("sandbox-apiserver served again %s after etcd's return, want within 2s", back)
	}
	checkRawCalls(t, fig, raw, readyz, down)
	wg.Wait()
	fig.set("requests_during_outage", probes)

	shortCount, longCount := 0, 0
	for _, p := range probes {
		if p.Timeout == seconds(shortTimeout) {
			shortCount++
			if p.Result == "ok" {
				t.Errorf("%s succeeded %.1fs into the etcd outage", p.Kind, p.Start)
			}
		} else {
			longCount++
		}
		if !p.Clean {
			t.Errorf("%s during the etcd outage failed with %q: want a 5xx status or a timeout", p.Kind, p.Result)
		}
		if limit := p.Timeout + 5; p.Took > limit {
			t.Errorf("%s during the etcd outage took %.1fs, beyond its %.0fs timeout", p.Kind, p.Took, p.Timeout)
		}
		if p.Result == "ok" && p.Start+p.Took < seconds(up.Sub(down)) {
			t.Errorf("%s succeeded %.1fs into the outage, before etcd was back", p.Kind, p.Start+p.Took)
		}
	}
	fig.set("short_requests", shortCount)
	fig.set("long_requests", longCount)
	if shortCount == 0 || longCount != len(kinds) {
		t.Errorf("made %d short and %d long requests during the outage, want some and %d", shortCount, longCount, len(kinds))
	}

	// The controllers and the informer work again.
	resumed := time.Now()
	applyYAML(t, ns, fmt.Sprintf(faultSandbox, "after")+"---\n"+fmt.Sprintf(faultClaim, "claim-after", "agent"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/after", "sandboxclaim/claim-after", "--timeout=120s")
	fig.set("new_sandbox_and_claim_ready_seconds", seconds(time.Since(resumed)))
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.readyReplicas}=2", "sandboxwarmpool/pool", "--timeout=120s")
	eventually(t, 2*time.Minute, "the informer started before the outage to see sandbox after", func() (bool, string) {
		seenMu.Lock()
		defer seenMu.Unlock()
		_, ok := seen["after"]
		return ok, fmt.Sprintf("informer saw %d sandboxes", len(seen))
	})
	fig.set("informer_watch_errors", watchErrors.Load())
	select {
	case how := <-plainDone:
		fig.set("plain_watch", how)
	case <-time.After(10 * time.Second):
		fig.set("plain_watch", "open, the Sandbox created after the outage not delivered within 10s")
	}

	after := ourObjectUIDs(t, client, ns)
	lost := 0
	for key, uid := range before {
		if after[key] != uid {
			lost++
			t.Errorf("%s: UID %s before the outage, %q after", key, uid, after[key])
		}
	}
	fig.set("objects_before", len(before))
	fig.set("objects_lost", lost)
	// A timed-out create may have been applied after all; with etcd down none should have been.
	stored := []string{}
	for _, p := range probes {
		if _, ok := after["Sandbox/"+p.Object]; ok && p.Object != "" && p.Result != "ok" {
			stored = append(stored, p.Object)
		}
	}
	fig.set("failed_creates_stored_later", stored)
}

// rawCall is one request of TestFaultSandboxEtcdOutage made over plain HTTP, so that no client
// retries hide what the servers answer.
type rawCall struct {
	Kind       string  `json:"kind"`
	Start      float64 `json:"start_seconds"` // after the outage began
	Took       float64 `json:"took_seconds"`
	Status     int     `json:"status,omitempty"`
	RetryAfter string  `json:"retry_after,omitempty"`
	Error      string  `json:"error,omitempty"` // no answer: a reset stream, a timeout
	start, end time.Time
}

// rawKinds are the requests rawCaller makes, in the order of a round.
var rawKinds = []string{"list sandboxes", "get sandbox", "create sandbox", "patch claim"}

// rawCaller returns a function that makes one request of a kind (i numbers the created
// Sandboxes) through kube-apiserver as the admin, with an 8 s timeout.
func rawCaller(t *testing.T, ns string) func(kind string, i int, down time.Time) rawCall {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	httpClient.Timeout = 8 * time.Second
	sandboxes := cfg.Host + "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes"
	claims := cfg.Host + "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxclaims"
	return func(kind string, i int, down time.Time) rawCall {
		method, url, body, contentType := http.MethodGet, sandboxes, "", ""
		switch kind {
		case "get sandbox":
			url = sandboxes + "/before"
		case "create sandbox":
			method, contentType = http.MethodPost, "application/json"
			body = fmt.Sprintf(`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"raw-%d"},`+
				`"spec":{"podTemplate":{"spec":{"nodeSelector":{"type":"kwok"},"tolerations":[{"key":"sandbox-apiserver.dev/kwok","operator":"Exists","effect":"NoSchedule"}],"containers":[{"name":"agent","image":"ghcr.io/example/agent:latest"}]}}}}`, i)
		case "patch claim":
			method, url, contentType = http.MethodPatch, claims+"/claim-before", "application/merge-patch+json"
			body = fmt.Sprintf(`{"metadata":{"annotations":{"e2e/raw":"%d"}}}`, i)
		}
		c := rawCall{Kind: kind, start: time.Now()}
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := httpClient.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			c.Status, c.RetryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		}
		if err != nil {
			c.Error = err.Error()
		}
		c.end = time.Now()
		c.Start, c.Took = hundredths(c.start.Sub(down)), hundredths(c.end.Sub(c.start))
		return c
	}
}

// readyzCheck is one look at sandbox-apiserver's /readyz?verbose.
type readyzCheck struct {
	Status      int
	EtcdFailing bool // the answer lists the etcd check as failed
	end         time.Time
}

// checkReadyz asks sandbox-apiserver itself (not through kube-apiserver) for /readyz?verbose,
// anonymously as a kubelet's probe does.
func checkReadyz(t *testing.T) readyzCheck {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(readFile(t, filepath.Join(certsDir, "ca.crt"))) {
		t.Fatal("no certificate in the local plane's ca.crt")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + sandboxAPIServerURL() + "/readyz?verbose")
	if err != nil {
		return readyzCheck{end: time.Now()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return readyzCheck{Status: resp.StatusCode, EtcdFailing: strings.Contains(string(body), "[-]etcd failed"), end: time.Now()}
}

// checkRawCalls checks the HTTP requests and /readyz looks of TestFaultSandboxEtcdOutage made while
// etcd was down: the first 503 within 1 s of the stop, every request answered with a 5xx within
// 1 s, every one after the first 503 with 503 and a Retry-After, and /readyz failing its etcd check
// from then on.
func checkRawCalls(t *testing.T, fig *figures, raw []rawCall, readyz []readyzCheck, down time.Time) {
	t.Helper()
	fig.set("raw_requests_during_outage", len(raw))
	var first503 time.Time
	for _, c := range raw {
		if c.Status == http.StatusServiceUnavailable && (first503.IsZero() || c.end.Before(first503)) {
			first503 = c.end
		}
	}
	if first503.IsZero() {
		t.Errorf("no 503 during the etcd outage in %d requests", len(raw))
		return
	}
	fig.set("first_503_after_etcd_stop_seconds", hundredths(first503.Sub(down)))
	if first503.Sub(down) > time.Second {
		t.Errorf("the first 503 came %s after etcd stopped, want within 1s", first503.Sub(down))
	}
	var slowest time.Duration
	statuses := map[string]int{}
	for _, c := range raw {
		took := c.end.Sub(c.start)
		slowest = max(slowest, took)
		what := fmt.Sprintf("%s %.2fs into the etcd outage", c.Kind, c.Start)
		switch {
		case c.Error != "":
			statuses["no answer: "+streamID.ReplaceAllString(c.Error, "stream ID N")]++
			t.Errorf("%s: %s, want a 503", what, c.Error)
			continue
		case took > time.Second:
			t.Errorf("%s: answered %d after %s, want within 1s", what, c.Status, took)
		case c.start.After(first503) && (c.Status != http.StatusServiceUnavailable || c.RetryAfter == ""):
			t.Errorf("%s: %d (Retry-After %q), want 503 with a Retry-After", what, c.Status, c.RetryAfter)
		case c.Status < 500:
			t.Errorf("%s: %d, want a 5xx", what, c.Status)
		}
		statuses[strconv.Itoa(c.Status)]++
	}
	fig.set("raw_requests_by_status", statuses)
	fig.set("raw_request_slowest_seconds", hundredths(slowest))

	var readyzFailing time.Time
	looks := 0
	for _, r := range readyz {
		if r.end.Before(first503) {
			continue
		}
		looks++
		if r.Status == http.StatusOK || !r.EtcdFailing {
			t.Errorf("/readyz %.2fs into the etcd outage: %d (etcd check failed: %v), want a failure of check etcd",
				r.end.Sub(down).Seconds(), r.Status, r.EtcdFailing)
		} else if readyzFailing.IsZero() {
			readyzFailing = r.end
		}
	}
	if looks == 0 {
		t.Error("no look at /readyz during the etcd outage")
	}
	if !readyzFailing.IsZero() {
		fig.set("readyz_failing_after_etcd_stop_seconds", hundredths(readyzFailing.Sub(down)))
	}
}

// hundredths rounds d to hundredths of seconds, for the figures.
func hundredths(d time.Duration) float64 {
	return float64(d.Round(10*time.Millisecond)) / float64(time.Second)
}

// ourObjectUIDs returns kind/name -> UID of every object of the four kinds in ns.
func ourObjectUIDs(t *testing.T, client versioned.Interface, ns string) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	out := map[string]types.UID{}
	add := func(kind string, objs []metav1.Object) {
		for _, o := range objs {
			out[kind+"/"+o.GetName()] = o.GetUID()
		}
	}
	sbs, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	add("Sandbox", objects(sbs.Items))
	claims, err := client.ExtensionsV1beta1().SandboxClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	add("SandboxClaim", objects(claims.Items))
	templates, err := client.ExtensionsV1beta1().SandboxTemplates(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	add("SandboxTemplate", objects(templates.Items))
	pools, err := client.ExtensionsV1beta1().SandboxWarmPools(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	add("SandboxWarmPool", objects(pools.Items))
	return out
}

// objects returns pointers to the items of a list as metav1.Objects.
func objects[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// TestFaultKubeAPIServerRestart restarts kube-apiserver under a running sandbox-apiserver: without
// a restart of ours the controllers pick up again, a pod deleted as soon as kube-apiserver is back
// is made again and a Sandbox created afterwards becomes Ready.
func TestFaultKubeAPIServerRestart(t *testing.T) {
	requirePlaneComponents(t, "kube-apiserver", "sandbox-apiserver")
	fig := newFigures(t)
	ns := newNamespace(t)
	restorePlane(t)
	ctx := context.Background()

	applyYAML(t, ns, fmt.Sprintf(faultSandbox, "first"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/first", "--timeout=120s")
	oldPod := jsonpath(t, ns, "{.metadata.uid}", "pod", "first")
	ourPID := pidOf(t, "sandbox-apiserver")

	start := time.Now()
	localUpT(t, 3*time.Minute, "restart-kube-apiserver")
	fig.set("kube_apiserver_restart_seconds", seconds(time.Since(start)))

	// Right away, before our controllers have necessarily watched again: delete the pod.
	kube, client := faultClients(t, 20*time.Second, 50)
	back := time.Now()
	eventually(t, time.Minute, "pod first deleted", func() (bool, string) {
		err := kube.CoreV1().Pods(ns).Delete(ctx, "first", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrTo(types.UID(oldPod))}})
		if err == nil || apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, err.Error()
	})
	eventually(t, 2*time.Minute, "pod first made again", func() (bool, string) {
		pod, err := kube.CoreV1().Pods(ns).Get(ctx, "first", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return string(pod.UID) != oldPod, "the old pod is still there"
	})
	fig.set("deleted_pod_recreated_seconds", seconds(time.Since(back)))

	// kube-scheduler (v1.36) may exit on the deletion: after the restart its cache can hold the
	// pod on another node than the update says, and it exits on purpose ("Scheduler cache is
	// corrupted"), counting on a kubelet to start it again. hack/local-up.sh plays that kubelet.
	exited := []string{}
	eventually(t, 2*time.Minute, "sandbox first Ready on its new pod", func() (bool, string) {
		running := componentsRunning()
		for _, c := range controlPlaneComponents {
			if !running[c] && c != "sandbox-apiserver" {
				t.Logf("%s exited after the kube-apiserver restart; starting it again", c)
				exited = append(exited, c)
				localUpT(t, 5*time.Minute, "start")
				break
			}
		}
		sb, err := client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "first", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return isReady(sb.Status.Conditions), fmt.Sprintf("sandbox conditions %v", sb.Status.Conditions)
	})
	fig.set("sandbox_ready_again_seconds", seconds(time.Since(back)))
	fig.set("upstream_components_exited", exited)
	created := time.Now()
	applyYAML(t, ns, fmt.Sprintf(faultSandbox, "second"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/second", "--timeout=120s")
	fig.set("new_sandbox_ready_seconds", seconds(time.Since(created)))
	if jsonpath(t, ns, "{.metadata.name}", "pod", "second") != "second" {
		t.Errorf("sandbox second has no pod second")
	}

	if now := pidOf(t, "sandbox-apiserver"); now != ourPID {
		t.Errorf("sandbox-apiserver was restarted (PID %s, then %s)", ourPID, now)
	}
	fig.set("sandbox_apiserver_restarted", pidOf(t, "sandbox-apiserver") != ourPID)
}

func ptrTo[T any](v T) *T { return &v }

// dependent is a Pod, Service, PVC or NetworkPolicy the controllers made, by kind/name.
type dependent struct {
	uid      types.UID
	deleting bool
}

// dependents returns the Pods, Services, PVCs and NetworkPolicies of ns that have an owner.
func dependents(ctx context.Context, kube kubernetes.Interface, ns string) (map[string]dependent, error) {
	out := map[string]dependent{}
	add := func(kind string, o metav1.Object) {
		if len(o.GetOwnerReferences()) > 0 {
			out[kind+"/"+o.GetName()] = dependent{uid: o.GetUID(), deleting: o.GetDeletionTimestamp() != nil}
		}
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		add("Pod", &pods.Items[i])
	}
	svcs, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range svcs.Items {
		add("Service", &svcs.Items[i])
	}
	pvcs, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pvcs.Items {
		add("PersistentVolumeClaim", &pvcs.Items[i])
	}
	policies, err := kube.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range policies.Items {
		add("NetworkPolicy", &policies.Items[i])
	}
	return out, nil
}

// compareDependents lists what of want is missing, replaced (another UID) or being deleted in got.
func compareDependents(want, got map[string]dependent) []string {
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[key]
		switch {
		case !ok:
			problems = append(problems, key+" deleted")
		case g.uid != want[key].uid:
			problems = append(problems, fmt.Sprintf("%s replaced (UID %s, was %s)", key, g.uid, want[key].uid))
		case g.deleting:
			problems = append(problems, key+" being deleted")
		}
	}
	return problems
}

// TestFaultGCWhileUnreachable stops sandbox-apiserver for 60 s while kube-controller-manager
// runs: its garbage collector cannot look up the Sandboxes and SandboxTemplates that own the
// Pods, Services, PVCs and NetworkPolicies, and must not take them for gone. The dependents are
// touched and a new dependent is made during the outage so that the collector looks at them.
// Every dependent is there with the same UID during the outage and after the restart.
func TestFaultGCWhileUnreachable(t *testing.T) {
	requirePlaneComponents(t, "kube-controller-manager", "sandbox-apiserver")
	const outage = 60 * time.Second
	fig := newFigures(t)
	ns := newNamespace(t)
	restorePlane(t)
	ctx := context.Background()
	kube, client := faultClients(t, 20*time.Second, 50)
	fig.set("outage_seconds", seconds(outage))

	applyYAML(t, ns, fmt.Sprintf(faultTemplate, "agent")+"---\n"+fmt.Sprintf(faultPool, "pool", 1, "agent")+"---\n"+
		fmt.Sprintf(faultFullSandbox, "full")+"---\n"+fmt.Sprintf(faultClaim, "claim", "agent"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/claim", "--timeout=120s")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.readyReplicas}=1", "sandboxwarmpool/pool", "--timeout=120s")
	// Every sandbox has its pod, full its Service and PVC, the template its NetworkPolicy.
	var want map[string]dependent
	eventually(t, 2*time.Minute, "the children of every sandbox and the template", func() (bool, string) {
		sbs, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		if want, err = dependents(ctx, kube, ns); err != nil {
			return false, err.Error()
		}
		count := map[string]int{}
		for key := range want {
			kind, _, _ := strings.Cut(key, "/")
			count[kind]++
		}
		return len(sbs.Items) == 3 && count["Pod"] == 3 && count["Service"] == 1 && count["PersistentVolumeClaim"] == 1 && count["NetworkPolicy"] == 1,
			fmt.Sprintf("%d sandboxes, dependents %v", len(sbs.Items), count)
	})
	sandbox, err := client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "full", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fig.set("dependents", len(want))

	kcmLog := filepath.Join(repoRoot, "_output/local/logs/kube-controller-manager.log")
	var logOffset int64
	if st, err := os.Stat(kcmLog); err == nil {
		logOffset = st.Size()
	}
	localUpT(t, 2*time.Minute, "stop-sandbox-apiserver")
	down := time.Now()

	// Make the collector look: an update of every dependent, and a new pod owned by sandbox full.
	for key := range want {
		kind, name, _ := strings.Cut(key, "/")
		patch := []byte(`{"metadata":{"annotations":{"e2e/outage":"touched"}}}`)
		var err error
		switch kind {
		case "Pod":
			_, err = kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		case "Service":
			_, err = kube.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		case "PersistentVolumeClaim":
			_, err = kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		case "NetworkPolicy":
			_, err = kube.NetworkingV1().NetworkPolicies(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err != nil {
			t.Errorf("touching %s during the outage: %v", key, err)
		}
	}
	probePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gc-probe", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: agentsv1beta1.SchemeGroupVersion.String(), Kind: "Sandbox", Name: sandbox.Name, UID: sandbox.UID,
		}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "ghcr.io/example/agent:latest"}}},
	}
	created, err := kube.CoreV1().Pods(ns).Create(ctx, probePod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod gc-probe owned by sandbox full during the outage: %v", err)
	}
	want["Pod/gc-probe"] = dependent{uid: created.UID}

	// The outage: look every few seconds until it is over.
	checks := 0
	for {
		got, err := dependents(ctx, kube, ns)
		if err != nil {
			t.Errorf("listing the dependents during the outage: %v", err)
		} else {
			checks++
			if problems := compareDependents(want, got); len(problems) > 0 {
				t.Errorf("%.0fs into the outage: %s", time.Since(down).Seconds(), strings.Join(problems, "; "))
				break
			}
		}
		if time.Since(down) >= outage {
			break
		}
		time.Sleep(min(5*time.Second, time.Until(down.Add(outage)))) // the outage itself
	}
	fig.set("checks_during_outage", checks)

	localUpT(t, 5*time.Minute, "start-sandbox-apiserver")
	fig.set("server_down_seconds", seconds(time.Since(down)))
	waitSandboxesServed(t, ns)
	got, err := dependents(ctx, kube, ns)
	if err != nil {
		t.Fatal(err)
	}
	problems := compareDependents(want, got)
	for _, p := range problems {
		t.Errorf("after the restart: %s", p)
	}
	fig.set("dependents_lost", len(problems))
	// The controllers still drive the same children: the claim is Ready on its old pod.
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/claim", "--timeout=120s")
	if got, err = dependents(ctx, kube, ns); err != nil {
		t.Fatal(err)
	}
	for _, p := range compareDependents(want, got) {
		t.Errorf("after the controllers resumed: %s", p)
	}

	if b, err := os.ReadFile(kcmLog); err == nil && int64(len(b)) >= logOffset {
		n := 0
		for _, line := range strings.Split(string(b[logOffset:]), "\n") {
			if strings.Contains(line, "agents.x-k8s.io") {
				n++
			}
		}
		// How often kube-controller-manager mentioned our groups meanwhile (failed discovery and
		// owner lookups): evidence that the collector ran into the outage.
		fig.set("kcm_log_lines_about_our_groups", n)
	}
}

// TestFaultNamespaceDeletion deletes a namespace full of our objects (a template, a warm pool, claims
// served warm and cold, sandboxes with a Service and a PVC, all with running children): the
// namespace finishes deleting and nothing of ours is left in it. TestNamespaceDeletion does the same
// for the examples without waiting for children; this one waits for everything to run first.
func TestFaultNamespaceDeletion(t *testing.T) {
	fig := newFigures(t)
	ns := newNamespace(t)
	ctx := context.Background()
	kube, client := faultClients(t, 20*time.Second, 50)

	manifest := fmt.Sprintf(faultTemplate, "agent") + "---\n" + fmt.Sprintf(faultPool, "pool", 3, "agent") + "---\n" +
		fmt.Sprintf(faultFullSandbox, "full") + "---\n" + fmt.Sprintf(faultSandbox, "plain")
	for i := range 5 {
		manifest += "---\n" + fmt.Sprintf(faultClaim, fmt.Sprintf("claim-%d", i), "agent")
	}
	applyYAML(t, ns, manifest)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim", "--all", "--timeout=120s")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/plain", "--timeout=120s")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.readyReplicas}=3", "sandboxwarmpool/pool", "--timeout=120s")
	countContents(t, fig, kube, client, ns)

	start := time.Now()
	kubectl(t, "delete", "namespace", ns, "--wait=false")
	eventually(t, 3*time.Minute, "namespace "+ns+" to be gone", func() (bool, string) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		var conds []string
		for _, c := range n.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				conds = append(conds, string(c.Type)+": "+c.Message)
			}
		}
		return false, fmt.Sprintf("%s; %s", n.Status.Phase, strings.Join(conds, "; "))
	})
	fig.set("namespace_gone_seconds", seconds(time.Since(start)))

	if left := ourObjectUIDs(t, client, ns); len(left) > 0 {
		t.Errorf("left in the deleted namespace: %v", slices.Sorted(maps.Keys(left)))
	}
	if left, err := dependents(ctx, kube, ns); err != nil || len(left) > 0 {
		t.Errorf("children left in the deleted namespace: %v (%v)", slices.Sorted(maps.Keys(left)), err)
	}
}

// TestFaultNamespaceForceFinalized removes a namespace from the cluster without the namespace
// controller deleting our objects first, as a user's force-finalize of a namespace stuck while this
// server was away does: the namespacecleanup controller sees it gone and deletes our objects left
// in it, and with them their pods and NetworkPolicy.
func TestFaultNamespaceForceFinalized(t *testing.T) {
	fig := newFigures(t)
	ns := newNamespace(t)
	ctx := context.Background()
	kube, client := faultClients(t, 20*time.Second, 50)

	applyYAML(t, ns, fmt.Sprintf(faultTemplate, "agent")+"---\n"+fmt.Sprintf(faultPool, "pool", 2, "agent")+"---\n"+
		fmt.Sprintf(faultSandbox, "plain")+"---\n"+fmt.Sprintf(faultClaim, "claim", "agent"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/claim", "sandbox/plain", "--timeout=120s")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.readyReplicas}=2", "sandboxwarmpool/pool", "--timeout=120s")
	countContents(t, fig, kube, client, ns)

	// Without its "kubernetes" finalizer the namespace controller deletes nothing in the
	// namespace: the first delete only marks it, the second removes it. That is what a
	// force-finalize leaves.
	namespace, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	namespace.Spec.Finalizers = nil
	if _, err := kube.CoreV1().Namespaces().Finalize(ctx, namespace, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	kubectl(t, "delete", "namespace", ns, "--wait=false")
	kubectl(t, "delete", "namespace", ns, "--timeout=30s")
	if _, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s still there after its finalizer-less delete: %v", ns, err)
	}

	eventually(t, 2*time.Minute, "our objects and their dependents in "+ns+" to be deleted", func() (bool, string) {
		left := ourObjectUIDs(t, client, ns)
		leftDeps, err := dependents(ctx, kube, ns)
		if err != nil {
			return false, err.Error()
		}
		return len(left)+len(leftDeps) == 0, fmt.Sprintf("ours: %v; dependents: %v",
			slices.Sorted(maps.Keys(left)), slices.Sorted(maps.Keys(leftDeps)))
	})
	fig.set("cleaned_up_seconds", seconds(time.Since(start)))
}

// countContents records in the figures "objects" and "dependents" how many of our objects ns holds
// and how many children of theirs the cluster holds there.
func countContents(t *testing.T, fig *figures, kube kubernetes.Interface, client versioned.Interface, ns string) {
	t.Helper()
	deps, err := dependents(context.Background(), kube, ns)
	if err != nil {
		t.Fatal(err)
	}
	fig.set("objects", len(ourObjectUIDs(t, client, ns)))
	fig.set("dependents", len(deps))
}
