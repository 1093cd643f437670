// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
)

// The leader election of the replicas of these tests: short, so a handover fits the test's time.
const (
	haLeaseDuration = 6 * time.Second
	haRenewDeadline = 4 * time.Second
	haRetryPeriod   = time.Second
	// haHandoverSlack is what a handover may take beyond the lease duration: the survivor notices
	// the last renewal up to one jittered retry period (1.2×) late and acquires the expired lease
	// at its next jittered retry, plus a few seconds for a loaded two-core machine.
	haHandoverSlack = 2*haRetryPeriod*12/10 + 4*time.Second
)

// TestHALeaderFailover runs two sandbox-apiserver replicas on a three-member etcd cluster, both
// serving the API and only the Lease holder reconciling. It kills the leader with SIGKILL while a
// batch of claims is pending: the other replica takes the Lease within the lease duration, every
// claim ends Ready with exactly one sandbox and no pod is left without its Sandbox.
func TestHALeaderFailover(t *testing.T) {
	const (
		poolReplicas = 10
		claims       = 20
		killAfter    = claims / 2 // claims sent before the leader dies; the rest after
	)
	figures := &haFailoverFigures{
		LeaseDurationSeconds: haLeaseDuration.Seconds(),
		RenewDeadlineSeconds: haRenewDeadline.Seconds(),
		RetryPeriodSeconds:   haRetryPeriod.Seconds(),
		HandoverBoundSeconds: (haLeaseDuration + haHandoverSlack).Seconds(),
		PoolReplicas:         poolReplicas,
		Claims:               claims,
	}
	haWriteFigures(t, figures)
	start := time.Now()
	h := haSetUp(t)
	leader, holder := h.waitSingleLeader(t, "before the failover")
	survivor := h.replicas[1-leader.index]
	t.Logf("leader %s holds the Lease as %q; %s stands by", leader.name, holder, survivor.name)
	h.expectBothServe(t)

	ctx := context.Background()
	sb := survivor.client
	if _, err := sb.ExtensionsV1beta1().SandboxTemplates(h.ns).Create(ctx, haTemplate("t"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating template t through %s: %v", survivor.name, err)
	}
	pool := &extensionsv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: extensionsv1beta1.SandboxWarmPoolSpec{
			Replicas:    ptr.To[int32](poolReplicas),
			TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "t"},
		},
	}
	if _, err := leader.client.ExtensionsV1beta1().SandboxWarmPools(h.ns).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating warm pool p through %s: %v", leader.name, err)
	}
	poolStart := time.Now()
	h.waitPoolReady(t, survivor, "p", poolReplicas)
	figures.PoolReadySeconds = time.Since(poolStart).Seconds()

	// Claims go to the survivor in parallel. The leader dies as soon as it has handed the first
	// of them a sandbox (a watch through the survivor tells): the first half is then part way
	// through provisioning, and the second half arrives while nobody reconciles.
	var createErrs []string
	createClaims := func(from, to int) {
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for i := from; i < to; i++ {
			wg.Go(func() {
				claim := &extensionsv1beta1.SandboxClaim{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%02d", i)},
					Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "t"}},
				}
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				created, err := sb.ExtensionsV1beta1().SandboxClaims(h.ns).Create(cctx, claim, metav1.CreateOptions{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					createErrs = append(createErrs, fmt.Sprintf("creating claim %s: %v", claim.Name, err))
				case meta.IsStatusConditionTrue(created.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)):
					figures.ReadyInCreateResponse++
				}
			})
		}
		wg.Wait()
	}
	list, err := sb.AgentsV1beta1().Sandboxes(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing sandboxes through %s: %v", survivor.name, err)
	}
	claimWatch := haStartWatch(t, survivor, h.ns, list.ResourceVersion)
	claimStart := time.Now()
	firstHalf := make(chan struct{})
	go func() {
		defer close(firstHalf)
		createClaims(0, killAfter)
	}()
	// Bounded: should the leader be slow, it dies with the first half untouched.
	claimWatch.waitUntil(10*time.Second, func(e watch.Event) bool {
		s, ok := e.Object.(*agentsv1beta1.Sandbox)
		if !ok {
			return false
		}
		ref := metav1.GetControllerOf(s)
		return ref != nil && ref.Kind == "SandboxClaim"
	})
	leader.proc.kill(t)
	killedAt := time.Now()
	t.Logf("SIGKILLed the leader %s %s after the first claim was sent", leader.name, killedAt.Sub(claimStart).Round(time.Millisecond))
	if s, err := h.sandboxState(ctx, survivor); err == nil {
		figures.SandboxesClaimedAtKill = s.claimed
		t.Logf("at the kill: %s", s)
	}
	<-firstHalf
	if list, err := sb.ExtensionsV1beta1().SandboxClaims(h.ns).List(ctx, metav1.ListOptions{}); err == nil {
		figures.ClaimsSentBeforeKill = len(list.Items)
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)) {
				figures.ClaimsReadyAtKill++
			}
		}
		t.Logf("%d of %d claims Ready when the leader died", figures.ClaimsReadyAtKill, len(list.Items))
	}
	// The survivor does not lead, yet binds claims as they are created, from its warm chooser.
	if figures.ReadyInCreateResponse == 0 {
		t.Errorf("none of the %d claims sent to %s before the kill was Ready in its create response", killAfter, survivor.name)
	}
	createClaims(killAfter, claims)
	if len(createErrs) > 0 {
		t.Errorf("creating claims through %s while the leader died: %d errors:\n%s",
			survivor.name, len(createErrs), indent(strings.Join(createErrs, "\n")))
	}
	figures.RequestErrors = len(createErrs)

	// The survivor takes the Lease once it expires.
	var newHolder string
	haPoll(t, haLeaseDuration+haHandoverSlack+30*time.Second, 100*time.Millisecond, "another holder of the Lease", func() (bool, string) {
		holderNow, err := h.leaseHolder(ctx)
		if err != nil {
			return false, err.Error()
		}
		newHolder = holderNow
		return holderNow != "" && holderNow != holder, "holder " + strconv.Quote(holderNow)
	})
	handover := time.Since(killedAt)
	figures.HandoverSeconds = handover.Seconds()
	haPoll(t, 30*time.Second, 100*time.Millisecond, "the leader metric of "+survivor.name, func() (bool, string) {
		v, err := survivor.leaderMetric(ctx)
		if err != nil {
			return false, err.Error()
		}
		return v == 1, fmt.Sprintf("sandbox_controller_leader %v", v)
	})
	figures.HandoverMetricSeconds = time.Since(killedAt).Seconds()
	t.Logf("handover: %s took the Lease as %q %s after the kill (metric 1 after %.2fs; lease duration %s)",
		survivor.name, newHolder, handover.Round(time.Millisecond), figures.HandoverMetricSeconds, haLeaseDuration)
	if bound := haLeaseDuration + haHandoverSlack; handover > bound {
		t.Errorf("handover took %s, more than the lease duration %s plus %s", handover.Round(time.Millisecond), haLeaseDuration, haHandoverSlack)
	}
	if !survivor.proc.logContains(newHolder) {
		t.Errorf("the Lease names %q, which the log of %s never mentions", newHolder, survivor.name)
	}

	// Every claim completes on the new leader.
	haPoll(t, 2*time.Minute, 250*time.Millisecond, "every claim Ready", func() (bool, string) {
		list, err := sb.ExtensionsV1beta1().SandboxClaims(h.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var pending []string
		for _, c := range list.Items {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)) || c.Status.SandboxStatus.Name == "" {
				pending = append(pending, c.Name+haConditionSummary(c.Status.Conditions))
			}
		}
		if len(list.Items) != claims {
			return false, fmt.Sprintf("%d claims listed", len(list.Items))
		}
		return len(pending) == 0, fmt.Sprintf("not Ready: %s", strings.Join(pending, ", "))
	})
	figures.ClaimsReadySeconds = time.Since(killedAt).Seconds()
	figures.ClaimsReady = claims
	t.Logf("all %d claims Ready %.2fs after the kill", claims, figures.ClaimsReadySeconds)

	// Exactly one sandbox per claim, the one its status names; the pool refills to its size and
	// nothing else is left over.
	var state haSandboxState
	haPoll(t, 2*time.Minute, 500*time.Millisecond, "one sandbox per claim, a full pool and no stray pod", func() (bool, string) {
		var err error
		state, err = h.sandboxState(ctx, survivor)
		if err != nil {
			return false, err.Error()
		}
		return state.settled(claims, poolReplicas), state.String()
	})
	figures.AdoptedFromPool = state.adopted
	figures.PodsLeaked = len(state.orphanPods)
	figures.Sandboxes = state.sandboxes
	h.waitPoolReady(t, survivor, "p", poolReplicas)
	figures.Pass = !t.Failed()
	figures.RunSeconds = time.Since(start).Seconds()
	t.Logf("figures: %+v", *figures)
}

// TestHAEtcdMemberLoss kills one member of the three-member etcd cluster (its leader, the harder
// case) under both replicas: reads, writes and watches through either replica keep working with
// no failed request, the controllers bring a new Sandbox to Ready, and the member restarted on its
// data directory rejoins.
func TestHAEtcdMemberLoss(t *testing.T) {
	figures := &haEtcdFigures{}
	haWriteFigures(t, figures)
	start := time.Now()
	h := haSetUp(t)
	leader, _ := h.waitSingleLeader(t, "before the etcd member loss")
	h.expectBothServe(t)
	ctx := context.Background()

	// Watches started before the loss, one through each replica.
	list, err := h.replicas[0].client.AgentsV1beta1().Sandboxes(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing sandboxes: %v", err)
	}
	var watches []*haWatch
	for _, r := range h.replicas {
		watches = append(watches, haStartWatch(t, r, h.ns, list.ResourceVersion))
	}

	traffic := haStartTraffic(t, h, "probe")
	haPoll(t, 30*time.Second, 100*time.Millisecond, "user traffic before the loss", func() (bool, string) {
		n, _ := traffic.counts()
		return n >= 30, fmt.Sprintf("%d requests", n)
	})

	victim := h.etcd.leader(t)
	figures.KilledMember = victim.name
	figures.KilledMemberWasLeader = true
	victim.proc.kill(t)
	killedAt := time.Now()
	t.Logf("SIGKILLed etcd member %s (the etcd leader)", victim.name)
	haPoll(t, 60*time.Second, 200*time.Millisecond, "a new etcd leader among the two members left", func() (bool, string) {
		m, err := h.etcd.findLeader()
		if err != nil {
			return false, err.Error()
		}
		figures.NewEtcdLeader = m.name
		return true, ""
	})
	figures.EtcdLeaderElectionSeconds = time.Since(killedAt).Seconds()
	t.Logf("etcd member %s leads after %.2fs", figures.NewEtcdLeader, figures.EtcdLeaderElectionSeconds)

	// The controllers (in the leader replica) still reconcile: a Sandbox created through the
	// other replica becomes Ready.
	other := h.replicas[1-leader.index]
	sbStart := time.Now()
	if _, err := other.client.AgentsV1beta1().Sandboxes(h.ns).Create(ctx, haSandbox("after-loss"), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating sandbox after-loss through %s with an etcd member down: %v", other.name, err)
	}
	haPoll(t, 90*time.Second, 200*time.Millisecond, "sandbox after-loss Ready", func() (bool, string) {
		s, err := leader.client.AgentsV1beta1().Sandboxes(h.ns).Get(ctx, "after-loss", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(s.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)), haConditionSummary(s.Status.Conditions)
	})
	figures.SandboxReadySeconds = time.Since(sbStart).Seconds()
	for _, r := range h.replicas {
		l, err := r.client.AgentsV1beta1().Sandboxes(h.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("listing sandboxes through %s with an etcd member down: %v", r.name, err)
			continue
		}
		if !slices.ContainsFunc(l.Items, func(s agentsv1beta1.Sandbox) bool { return s.Name == "after-loss" }) {
			t.Errorf("sandbox after-loss missing from the list of %s", r.name)
		}
	}
	patch := []byte(`{"metadata":{"labels":{"seen":"after-loss"}}}`)
	if _, err := h.replicas[0].client.AgentsV1beta1().Sandboxes(h.ns).Patch(ctx, "after-loss", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("labelling sandbox after-loss: %v", err)
	}
	for _, w := range watches {
		w.waitFor(t, "the label of after-loss", func(e watch.Event) bool {
			s, ok := e.Object.(*agentsv1beta1.Sandbox)
			return ok && e.Type == watch.Modified && s.Name == "after-loss" && s.Labels["seen"] == "after-loss"
		})
	}

	// The member comes back on its data directory and rejoins.
	restartAt := time.Now()
	victim.start(t)
	haPoll(t, 60*time.Second, 200*time.Millisecond, "etcd member "+victim.name+" healthy again", func() (bool, string) {
		return victim.healthy(ctx)
	})
	figures.RejoinSeconds = time.Since(restartAt).Seconds()
	for _, m := range h.etcd.members {
		if ok, state := m.healthy(ctx); !ok {
			t.Errorf("etcd member %s not healthy after the rejoin: %s", m.name, state)
		}
	}
	t.Logf("etcd member %s rejoined %.2fs after its restart", victim.name, figures.RejoinSeconds)

	// A little more traffic with the member back, then the tally.
	before, _ := traffic.counts()
	haPoll(t, 30*time.Second, 100*time.Millisecond, "user traffic after the rejoin", func() (bool, string) {
		n, _ := traffic.counts()
		return n >= before+30, fmt.Sprintf("%d requests", n-before)
	})
	traffic.stop()
	figures.Requests, figures.RequestErrors = traffic.counts()
	figures.Errors = traffic.errorList()
	figures.MaxLatencySeconds, figures.MaxLatencyRequest = traffic.slowest()
	t.Logf("user traffic: %d requests, %d failed, slowest %.3fs (%s)",
		figures.Requests, figures.RequestErrors, figures.MaxLatencySeconds, figures.MaxLatencyRequest)
	if figures.RequestErrors > 0 {
		t.Errorf("%d of %d user requests failed around the loss of etcd member %s:\n%s",
			figures.RequestErrors, figures.Requests, victim.name, indent(strings.Join(figures.Errors, "\n")))
	}
	for _, w := range watches {
		n, problems := w.summary()
		figures.WatchEvents += n
		for _, p := range problems {
			t.Errorf("watch through %s: %s", w.replica.name, p)
		}
	}
	if _, holder := h.waitSingleLeader(t, "after the etcd member loss"); holder == "" {
		t.Error("no Lease holder after the etcd member loss")
	}
	figures.Pass = !t.Failed()
	figures.RunSeconds = time.Since(start).Seconds()
	t.Logf("figures: %+v", *figures)
}

// haFailoverFigures are what TestHALeaderFailover measured, written to
// _output/reliability/TestHALeaderFailover.json.
type haFailoverFigures struct {
	LeaseDurationSeconds  float64 `json:"leaseDurationSeconds"`
	RenewDeadlineSeconds  float64 `json:"renewDeadlineSeconds"`
	RetryPeriodSeconds    float64 `json:"retryPeriodSeconds"`
	HandoverSeconds       float64 `json:"handoverSeconds"`       // SIGKILL of the leader to a new Lease holder
	HandoverMetricSeconds float64 `json:"handoverMetricSeconds"` // SIGKILL to sandbox_controller_leader 1 on the survivor
	HandoverBoundSeconds  float64 `json:"handoverBoundSeconds"`
	PoolReplicas          int     `json:"poolReplicas"`
	PoolReadySeconds      float64 `json:"poolReadySeconds"`
	Claims                int     `json:"claims"`
	ClaimsSentBeforeKill  int     `json:"claimsSentBeforeKill"`
	ClaimsReadyAtKill     int     `json:"claimsReadyAtKill"` // of those, Ready when the leader died
	// ReadyInCreateResponse counts the claims the survivor, not leading, bound at create time.
	ReadyInCreateResponse  int     `json:"readyInCreateResponse"`
	SandboxesClaimedAtKill int     `json:"sandboxesClaimedAtKill"` // sandboxes handed to a claim by then
	ClaimsReady            int     `json:"claimsReady"`
	ClaimsReadySeconds     float64 `json:"claimsReadySeconds"` // SIGKILL to every claim Ready
	AdoptedFromPool        int     `json:"adoptedFromPool"`
	Sandboxes              int     `json:"sandboxes"`
	PodsLeaked             int     `json:"podsLeaked"`
	RequestErrors          int     `json:"requestErrors"`
	RunSeconds             float64 `json:"runSeconds"`
	Pass                   bool    `json:"pass"`
}

// haEtcdFigures are what TestHAEtcdMemberLoss measured, written to
// _output/reliability/TestHAEtcdMemberLoss.json.
type haEtcdFigures struct {
	KilledMember              string   `json:"killedMember"`
	KilledMemberWasLeader     bool     `json:"killedMemberWasLeader"`
	NewEtcdLeader             string   `json:"newEtcdLeader"`
	EtcdLeaderElectionSeconds float64  `json:"etcdLeaderElectionSeconds"`
	SandboxReadySeconds       float64  `json:"sandboxReadySeconds"` // create to Ready with the member down
	RejoinSeconds             float64  `json:"rejoinSeconds"`       // restart to a healthy member
	Requests                  int      `json:"requests"`
	RequestErrors             int      `json:"requestErrors"`
	Errors                    []string `json:"errors,omitempty"`
	MaxLatencySeconds         float64  `json:"maxLatencySeconds"`
	MaxLatencyRequest         string   `json:"maxLatencyRequest"`
	WatchEvents               int      `json:"watchEvents"`
	RunSeconds                float64  `json:"runSeconds"`
	Pass                      bool     `json:"pass"`
}

// haWriteFigures writes figures, as they are when the test ends, to
// _output/reliability/<test>.json.
func haWriteFigures(t *testing.T, figures any) {
	t.Helper()
	t.Cleanup(func() {
		dir := filepath.Join(repoRoot, "_output/reliability")
		data, err := json.MarshalIndent(map[string]any{
			"test":    t.Name(),
			"time":    time.Now().UTC().Format(time.RFC3339),
			"figures": figures,
		}, "", "  ")
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, t.Name()+".json"), append(data, '\n'), 0o644)
		}
		if err != nil {
			t.Errorf("writing the figures: %v", err)
			return
		}
		t.Logf("figures written to _output/reliability/%s.json", t.Name())
	})
}

// haCluster is what haSetUp started: the etcd cluster, the two replicas and the namespace their
// objects live in (the Namespace in the cluster; the objects in the etcd cluster).
type haCluster struct {
	etcd      *haEtcd
	replicas  []*haReplica
	kube      kubernetes.Interface // the cluster admin
	leaseName string
	ns        string
}

// haSetUp starts a three-member etcd cluster and two replicas on it, with a namespace and a Lease
// of their own, and registers the cleanup of all of it.
//
// The sandbox-apiserver of the local control plane is stopped for the test: the aggregator sends
// the Sandbox API to it, and it does not know the Sandboxes of these replicas (they live in
// another etcd), so kube-controller-manager's garbage collector, which checks the owners of Pods
// through the aggregator, would find them missing and delete their pods as fast as they are made.
// With the API unavailable the collector cannot tell and leaves them alone. Like TestAvailability
// the test is not parallel, so no other test of the package runs meanwhile.
func haSetUp(t *testing.T) *haCluster {
	t.Helper()
	if !componentsRunning()["sandbox-apiserver"] {
		t.Skip("sandbox-apiserver is not run by hack/local-up.sh in this checkout; it must be stopped so the garbage collector leaves the replicas' pods alone")
	}
	for _, bin := range []string{"_output/tools/bin/etcd", "_output/bin/sandbox-apiserver"} {
		if _, err := os.Stat(filepath.Join(repoRoot, bin)); err != nil {
			t.Fatalf("%s missing: run make build tools", bin)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", adminKubeconfig, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &haCluster{kube: kube, leaseName: "sandbox-ha-test-" + randSuffix(6)}
	h.ns = newNamespace(t)
	// Runs once the local plane's server is back: the namespace controller needs the discovery
	// of every API to empty a namespace, so the namespace is gone before another test stops
	// the server again.
	t.Cleanup(func() { h.deleteNamespace(t) })
	t.Cleanup(func() {
		localUpT(t, 5*time.Minute, "start-sandbox-apiserver")
		waitSandboxesServed(t, h.ns)
	})
	localUpT(t, 2*time.Minute, "stop-sandbox-apiserver")

	dir := t.TempDir()
	h.etcd = haStartEtcd(t, dir)
	// Runs once the replicas have stopped.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := h.kube.CoordinationV1().Leases("kube-system").Delete(ctx, h.leaseName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Lease kube-system/%s: %v", h.leaseName, err)
		}
	})
	for i := range 2 {
		r := h.newReplica(t, dir, i)
		r.start(t)
		h.replicas = append(h.replicas, r)
	}
	for _, r := range h.replicas {
		r.waitReady(t)
	}
	// Runs before the replicas stop: the objects go through a replica whose controllers run
	// their finalizers and delete their pods.
	t.Cleanup(func() { h.deleteObjects(t) })
	return h
}

// deleteNamespace deletes the test's namespace and waits up to two minutes until it is gone.
func (h *haCluster) deleteNamespace(t *testing.T) {
	start := time.Now()
	if _, stderr, err := kubectlErr(t, "delete", "namespace", h.ns, "--ignore-not-found", "--wait=false"); err != nil {
		t.Errorf("deleting namespace %s: %v\n%s", h.ns, err, stderr)
		return
	}
	deadline := start.Add(2 * time.Minute)
	for {
		ns, err := h.kube.CoreV1().Namespaces().Get(context.Background(), h.ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Logf("namespace %s gone after %s", h.ns, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			var conds []string
			if err == nil {
				for _, c := range ns.Status.Conditions {
					if c.Status == corev1.ConditionTrue {
						conds = append(conds, fmt.Sprintf("%s: %s", c.Type, c.Message))
					}
				}
			}
			t.Logf("namespace %s still there after %s (%v %q); the namespace controller finishes it later",
				h.ns, time.Since(start).Round(time.Millisecond), err, conds)
			return
		}
		time.Sleep(time.Second)
	}
}

// expectBothServe creates a template through the first replica and reads it through the second.
func (h *haCluster) expectBothServe(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	a, b := h.replicas[0], h.replicas[1]
	if _, err := a.client.ExtensionsV1beta1().SandboxTemplates(h.ns).Create(ctx, haTemplate("probe"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating template probe through %s: %v", a.name, err)
	}
	got, err := b.client.ExtensionsV1beta1().SandboxTemplates(h.ns).Get(ctx, "probe", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading template probe through %s after creating it through %s: %v", b.name, a.name, err)
	}
	list, err := b.client.ExtensionsV1beta1().SandboxTemplates(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing templates through %s: %v", b.name, err)
	}
	if !slices.ContainsFunc(list.Items, func(x extensionsv1beta1.SandboxTemplate) bool { return x.UID == got.UID }) {
		t.Errorf("template probe (uid %s) missing from the list of %s", got.UID, b.name)
	}
	t.Logf("both replicas serve the API: template probe created through %s, read through %s", a.name, b.name)
}

// waitSingleLeader waits until the Lease has a holder and exactly one live replica reports
// sandbox_controller_leader 1 (the others 0), and that replica's log names the holder.
func (h *haCluster) waitSingleLeader(t *testing.T, when string) (*haReplica, string) {
	t.Helper()
	ctx := context.Background()
	var (
		leader *haReplica
		holder string
	)
	haPoll(t, haLeaseDuration+haHandoverSlack+60*time.Second, 200*time.Millisecond, "exactly one leader "+when, func() (bool, string) {
		var err error
		if holder, err = h.leaseHolder(ctx); err != nil {
			return false, err.Error()
		}
		leader = nil
		var state []string
		for _, r := range h.replicas {
			if r.proc.exited() {
				continue
			}
			v, err := r.leaderMetric(ctx)
			if err != nil {
				return false, fmt.Sprintf("%s: %v", r.name, err)
			}
			state = append(state, fmt.Sprintf("%s=%v", r.name, v))
			switch v {
			case 1:
				if leader != nil {
					return false, "two leaders: " + strings.Join(state, " ")
				}
				leader = r
			case 0:
			default:
				return false, "unexpected values: " + strings.Join(state, " ")
			}
		}
		summary := fmt.Sprintf("Lease holder %q, sandbox_controller_leader %s", holder, strings.Join(state, " "))
		return leader != nil && holder != "" && leader.proc.logContains(holder), summary
	})
	t.Logf("%s: %s leads, Lease kube-system/%s held by %q", when, leader.name, h.leaseName, holder)
	return leader, holder
}

// leaseHolder returns the holderIdentity of the replicas' Lease ("" when there is none yet).
func (h *haCluster) leaseHolder(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lease, err := h.kube.CoordinationV1().Leases("kube-system").Get(ctx, h.leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// waitPoolReady waits until the pool reports replicas Ready members.
func (h *haCluster) waitPoolReady(t *testing.T, r *haReplica, name string, replicas int32) {
	t.Helper()
	haPoll(t, 2*time.Minute, 250*time.Millisecond, "warm pool "+name+" Ready", func() (bool, string) {
		p, err := r.client.ExtensionsV1beta1().SandboxWarmPools(h.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.ReadyReplicas == replicas, fmt.Sprintf("replicas %d, ready %d", p.Status.Replicas, p.Status.ReadyReplicas)
	})
}

// haSandboxState is how the namespace's sandboxes and pods relate to their owners.
type haSandboxState struct {
	sandboxes, claimed, pooled, adopted int
	claimProblems                       []string // claims without exactly their one sandbox
	strays                              []string // sandboxes owned by neither a claim nor the pool
	orphanPods                          []string // pods whose Sandbox is gone
	extraPods                           []string // sandboxes with more than one live pod
}

func (s haSandboxState) settled(claims, pool int) bool {
	return s.claimed == claims && s.pooled == pool && len(s.claimProblems) == 0 && len(s.strays) == 0 &&
		len(s.orphanPods) == 0 && len(s.extraPods) == 0
}

func (s haSandboxState) String() string {
	return fmt.Sprintf("%d sandboxes: %d claimed (%d adopted from the pool), %d in the pool; claim problems %q; stray sandboxes %q; orphan pods %q; sandboxes with extra pods %q",
		s.sandboxes, s.claimed, s.adopted, s.pooled, s.claimProblems, s.strays, s.orphanPods, s.extraPods)
}

// sandboxState lists the claims and sandboxes through r and the pods from the cluster.
func (h *haCluster) sandboxState(ctx context.Context, r *haReplica) (haSandboxState, error) {
	var s haSandboxState
	claims, err := r.client.ExtensionsV1beta1().SandboxClaims(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	sandboxes, err := r.client.AgentsV1beta1().Sandboxes(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	pods, err := h.kube.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{LabelSelector: agentsv1beta1.SandboxNameHashLabel})
	if err != nil {
		return s, err
	}
	s.sandboxes = len(sandboxes.Items)
	byUID := map[types.UID]*agentsv1beta1.Sandbox{}
	owned := map[types.UID][]string{} // claim UID -> its sandboxes
	for i := range sandboxes.Items {
		sb := &sandboxes.Items[i]
		byUID[sb.UID] = sb
		ref := metav1.GetControllerOf(sb)
		switch {
		case ref != nil && ref.Kind == "SandboxClaim":
			s.claimed++
			owned[ref.UID] = append(owned[ref.UID], sb.Name)
			if strings.HasPrefix(sb.Name, "p-") { // a member of pool p; cold ones are named after their claim
				s.adopted++
			}
		case ref != nil && ref.Kind == "SandboxWarmPool" && ref.Name == "p":
			s.pooled++
		default:
			s.strays = append(s.strays, sb.Name)
		}
	}
	for _, c := range claims.Items {
		mine := owned[c.UID]
		switch {
		case len(mine) != 1:
			s.claimProblems = append(s.claimProblems, fmt.Sprintf("claim %s owns %d sandboxes %q", c.Name, len(mine), mine))
		case c.Status.SandboxStatus.Name != mine[0]:
			s.claimProblems = append(s.claimProblems, fmt.Sprintf("claim %s names sandbox %q in its status but owns %q", c.Name, c.Status.SandboxStatus.Name, mine[0]))
		}
	}
	live := map[types.UID]int{}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "Sandbox" || byUID[ref.UID] == nil {
			s.orphanPods = append(s.orphanPods, p.Name)
			continue
		}
		if p.DeletionTimestamp == nil {
			live[ref.UID]++
		}
	}
	for uid, n := range live {
		if n > 1 {
			s.extraPods = append(s.extraPods, byUID[uid].Name)
		}
	}
	return s, nil
}

// deleteObjects deletes the claims, pools, sandboxes and templates of the namespace through a
// live replica and waits until they and their pods are gone, so nothing the replicas made
// outlives them. On failure it first logs what was there.
func (h *haCluster) deleteObjects(t *testing.T) {
	var r *haReplica
	for _, c := range h.replicas {
		if !c.proc.exited() {
			r = c
			break
		}
	}
	if r == nil {
		t.Logf("no replica left to delete the objects of %s through; the namespace deletion takes their pods", h.ns)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if t.Failed() {
		if s, err := h.sandboxState(ctx, r); err == nil {
			t.Logf("state at failure: %s", s)
		}
	}
	ext, agents := r.client.ExtensionsV1beta1(), r.client.AgentsV1beta1()
	deleteAll := func(kind string, list func() ([]string, error), del func(string) error) {
		items, err := list()
		if err != nil {
			t.Errorf("cleanup: listing %s: %v", kind, err)
			return
		}
		for _, name := range items {
			if err := del(name); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: deleting %s %s: %v", kind, name, err)
			}
		}
	}
	opts := metav1.DeleteOptions{}
	deleteAll("claims", func() ([]string, error) {
		l, err := ext.SandboxClaims(h.ns).List(ctx, metav1.ListOptions{})
		return haNames(l, err, func(i int) string { return l.Items[i].Name }, func() int { return len(l.Items) })
	}, func(n string) error { return ext.SandboxClaims(h.ns).Delete(ctx, n, opts) })
	deleteAll("warm pools", func() ([]string, error) {
		l, err := ext.SandboxWarmPools(h.ns).List(ctx, metav1.ListOptions{})
		return haNames(l, err, func(i int) string { return l.Items[i].Name }, func() int { return len(l.Items) })
	}, func(n string) error { return ext.SandboxWarmPools(h.ns).Delete(ctx, n, opts) })
	deleteAll("sandboxes", func() ([]string, error) {
		l, err := agents.Sandboxes(h.ns).List(ctx, metav1.ListOptions{})
		return haNames(l, err, func(i int) string { return l.Items[i].Name }, func() int { return len(l.Items) })
	}, func(n string) error { return agents.Sandboxes(h.ns).Delete(ctx, n, opts) })
	deleteAll("templates", func() ([]string, error) {
		l, err := ext.SandboxTemplates(h.ns).List(ctx, metav1.ListOptions{})
		return haNames(l, err, func(i int) string { return l.Items[i].Name }, func() int { return len(l.Items) })
	}, func(n string) error { return ext.SandboxTemplates(h.ns).Delete(ctx, n, opts) })

	deadline := time.Now().Add(90 * time.Second)
	var left string
	for time.Now().Before(deadline) {
		left = h.leftovers(ctx, r)
		if left == "" {
			t.Logf("cleanup: the objects of %s and their pods are gone", h.ns)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("cleanup: after 90s %s still holds %s", h.ns, left)
}

// leftovers says what of the namespace's objects and pods is still there ("" when nothing).
func (h *haCluster) leftovers(ctx context.Context, r *haReplica) string {
	var parts []string
	count := func(what string, n int, err error) {
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", what, err))
		} else if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	c, err := r.client.ExtensionsV1beta1().SandboxClaims(h.ns).List(ctx, metav1.ListOptions{})
	count("claims", haLen(c, err, func() int { return len(c.Items) }), err)
	p, err := r.client.ExtensionsV1beta1().SandboxWarmPools(h.ns).List(ctx, metav1.ListOptions{})
	count("warm pools", haLen(p, err, func() int { return len(p.Items) }), err)
	s, err := r.client.AgentsV1beta1().Sandboxes(h.ns).List(ctx, metav1.ListOptions{})
	count("sandboxes", haLen(s, err, func() int { return len(s.Items) }), err)
	tp, err := r.client.ExtensionsV1beta1().SandboxTemplates(h.ns).List(ctx, metav1.ListOptions{})
	count("templates", haLen(tp, err, func() int { return len(tp.Items) }), err)
	pods, err := h.kube.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{LabelSelector: agentsv1beta1.SandboxNameHashLabel})
	count("pods", haLen(pods, err, func() int { return len(pods.Items) }), err)
	return strings.Join(parts, ", ")
}

func haNames[L any](l *L, err error, name func(int) string, n func() int) ([]string, error) {
	if err != nil {
		return nil, err
	}
	out := make([]string, n())
	for i := range out {
		out[i] = name(i)
	}
	return out, nil
}

func haLen[L any](l *L, err error, n func() int) int {
	if err != nil || l == nil {
		return 0
	}
	return n()
}

// haTemplate is a template of one container.
func haTemplate(name string) *extensionsv1beta1.SandboxTemplate {
	return &extensionsv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: extensionsv1beta1.SandboxTemplateSpec{PodTemplate: agentsv1beta1.PodTemplate{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}}},
		}},
	}
}

// haSandbox is a Sandbox of one container.
func haSandbox(name string) *agentsv1beta1.Sandbox {
	return &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}}},
		}},
	}
}

// haConditionSummary prints conditions as " (Type=Status/Reason ...)".
func haConditionSummary(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return " (" + strings.Join(parts, " ") + ")"
}

// haPoll polls cond every interval until it reports done, failing the test after timeout with
// the last state it reported.
func haPoll(t *testing.T, timeout, interval time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(interval)
	}
}

// haFreePort returns a TCP port on 127.0.0.1 that nothing listens on right now.
func haFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// haProcess is a child process with its output in a log file. The child dies with the test
// binary (SIGKILL on the parent's death), so an interrupted run leaves nothing behind.
type haProcess struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// haStartProcess starts bin with args, appending its output to logPath.
func haStartProcess(t *testing.T, name, logPath, bin string, args ...string) *haProcess {
	t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logFile, "==== %s starting %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), bin, shellJoin(args))
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &haProcess{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "==== %s exited: %v\n", time.Now().UTC().Format(time.RFC3339Nano), err)
		logFile.Close()
		close(p.done)
	}()
	return p
}

func (p *haProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *haProcess) kill(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Fatalf("%s exited before it could be killed; see %s", p.name, p.logPath)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s (pid %d) still running 30s after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// stop sends SIGTERM, then SIGKILL after 20s, and waits until the process is gone.
func (p *haProcess) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(20 * time.Second):
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
	}
}

// logContains says whether the process's log holds s.
func (p *haProcess) logContains(s string) bool {
	data, err := os.ReadFile(p.logPath)
	return err == nil && s != "" && bytes.Contains(data, []byte(s))
}

// haLogTail returns the last n lines of a log file.
func haLogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// haPrintLogsOnFailure logs the end of each log file when the test has failed.
func haPrintLogsOnFailure(t *testing.T, paths ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, p := range paths {
			t.Logf("---- last 80 lines of %s ----\n%s", filepath.Base(p), indent(haLogTail(p, 80)))
		}
	})
}

// haEtcd is a three-member etcd cluster on loopback. Like the local plane's sandbox-etcd, its
// members speak TLS to clients and to each other and require a certificate of sandbox-etcd-ca
// (hack/local-up.sh makes them: a serving and peer certificate for 127.0.0.1, and
// sandbox-apiserver's client certificate).
type haEtcd struct {
	members []*haEtcdMember
	client  *http.Client // authenticated with sandbox-apiserver's etcd client certificate
}

// haEtcdCert is a file of the local plane's sandbox-etcd certificates.
func haEtcdCert(name string) string { return filepath.Join(certsDir, name) }

// haEtcdClientFlags are sandbox-apiserver's flags for the TLS client of the cluster.
func haEtcdClientFlags() []string {
	return []string{
		"--etcd-cafile=" + haEtcdCert("sandbox-etcd-ca.crt"),
		"--etcd-certfile=" + haEtcdCert("sandbox-etcd-client.crt"),
		"--etcd-keyfile=" + haEtcdCert("sandbox-etcd-client.key"),
	}
}

// haEtcdHTTPClient is an HTTP client that the cluster's members accept.
func haEtcdHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	tlsConfig, err := transport.TLSConfigFor(&transport.Config{TLS: transport.TLSConfig{
		CAFile:   haEtcdCert("sandbox-etcd-ca.crt"),
		CertFile: haEtcdCert("sandbox-etcd-client.crt"),
		KeyFile:  haEtcdCert("sandbox-etcd-client.key"),
	}})
	if err != nil {
		t.Fatalf("etcd client certificate of the local plane: %v", err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
}

type haEtcdMember struct {
	name      string
	clientURL string
	http      *http.Client
	args      []string
	logPath   string
	proc      *haProcess
}

// haStartEtcd starts three etcd members with data directories under dir and waits until each
// is healthy (a member is healthy once the cluster has a leader). Cleanups stop them.
func haStartEtcd(t *testing.T, dir string) *haEtcd {
	t.Helper()
	e := &haEtcd{client: haEtcdHTTPClient(t)}
	token := "sandbox-ha-" + randSuffix(6)
	var peers []string
	type ports struct{ client, peer int }
	var ps []ports
	for i := range 3 {
		p := ports{haFreePort(t), haFreePort(t)}
		ps = append(ps, p)
		peers = append(peers, fmt.Sprintf("etcd-%d=https://127.0.0.1:%d", i, p.peer))
	}
	var logs []string
	for i, p := range ps {
		name := fmt.Sprintf("etcd-%d", i)
		data := filepath.Join(dir, name)
		if err := os.Mkdir(data, 0o700); err != nil {
			t.Fatal(err)
		}
		client := fmt.Sprintf("https://127.0.0.1:%d", p.client)
		peer := fmt.Sprintf("https://127.0.0.1:%d", p.peer)
		m := &haEtcdMember{
			name:      name,
			http:      e.client,
			clientURL: client,
			logPath:   filepath.Join(dir, name+".log"),
			args: []string{
				"--name=" + name,
				"--data-dir=" + data,
				"--listen-client-urls=" + client,
				"--advertise-client-urls=" + client,
				"--listen-peer-urls=" + peer,
				"--initial-advertise-peer-urls=" + peer,
				"--initial-cluster=" + strings.Join(peers, ","),
				"--initial-cluster-state=new",
				"--initial-cluster-token=" + token,
				"--cert-file=" + haEtcdCert("sandbox-etcd.crt"),
				"--key-file=" + haEtcdCert("sandbox-etcd.key"),
				"--trusted-ca-file=" + haEtcdCert("sandbox-etcd-ca.crt"),
				"--client-cert-auth=true",
				"--peer-cert-file=" + haEtcdCert("sandbox-etcd.crt"),
				"--peer-key-file=" + haEtcdCert("sandbox-etcd.key"),
				"--peer-trusted-ca-file=" + haEtcdCert("sandbox-etcd-ca.crt"),
				"--peer-client-cert-auth=true",
				// Twice the default heartbeat and election timeout: the machine is small and shared.
				"--heartbeat-interval=200",
				"--election-timeout=2000",
				"--log-level=warn",
			},
		}
		e.members = append(e.members, m)
		logs = append(logs, m.logPath)
	}
	haPrintLogsOnFailure(t, logs...)
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, m := range e.members {
			if m.proc != nil {
				wg.Go(m.proc.stop)
			}
		}
		wg.Wait()
	})
	for _, m := range e.members {
		m.start(t)
	}
	ctx := context.Background()
	haPoll(t, 60*time.Second, 200*time.Millisecond, "the etcd cluster healthy", func() (bool, string) {
		var state []string
		for _, m := range e.members {
			if m.proc.exited() {
				t.Fatalf("etcd member %s exited during start-up:\n%s", m.name, indent(haLogTail(m.logPath, 30)))
			}
			if ok, s := m.healthy(ctx); !ok {
				state = append(state, m.name+": "+s)
			}
		}
		return len(state) == 0, strings.Join(state, "; ")
	})
	t.Logf("etcd cluster healthy: %s", e.clientURLs())
	return e
}

// clientURLs is the --etcd-servers value for the cluster.
func (e *haEtcd) clientURLs() string {
	var urls []string
	for _, m := range e.members {
		urls = append(urls, m.clientURL)
	}
	return strings.Join(urls, ",")
}

// findLeader returns the live member that reports itself the leader.
func (e *haEtcd) findLeader() (*haEtcdMember, error) {
	var state []string
	for _, m := range e.members {
		if m.proc.exited() {
			continue
		}
		v, err := haMetric(context.Background(), e.client, m.clientURL+"/metrics", "etcd_server_is_leader")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		if v == 1 {
			return m, nil
		}
		state = append(state, fmt.Sprintf("%s=%v", m.name, v))
	}
	return nil, fmt.Errorf("no member leads: etcd_server_is_leader %s", strings.Join(state, " "))
}

// leader waits for and returns the member that leads.
func (e *haEtcd) leader(t *testing.T) *haEtcdMember {
	t.Helper()
	var m *haEtcdMember
	haPoll(t, 30*time.Second, 200*time.Millisecond, "an etcd leader", func() (bool, string) {
		var err error
		if m, err = e.findLeader(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return m
}

// start starts (or restarts, on the same data directory) the member.
func (m *haEtcdMember) start(t *testing.T) {
	t.Helper()
	if m.proc != nil && !m.proc.exited() {
		t.Fatalf("etcd member %s is already running", m.name)
	}
	m.proc = haStartProcess(t, m.name, m.logPath, filepath.Join(repoRoot, "_output/tools/bin/etcd"), m.args...)
}

// healthy asks the member's /health, which is true once it has a leader and no alarm.
func (m *haEtcdMember) healthy(ctx context.Context) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.clientURL+"/health", nil)
	resp, err := m.http.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var h struct {
		Health string `json:"health"`
	}
	_ = json.Unmarshal(body, &h)
	return resp.StatusCode == http.StatusOK && h.Health == "true", fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
}

// haReplica is one sandbox-apiserver of the test with an admin client for it.
type haReplica struct {
	index   int
	name    string
	port    int
	args    []string
	logPath string
	proc    *haProcess
	config  *rest.Config
	client  versioned.Interface
	http    *http.Client
}

// newReplica prepares replica i: its flags, log file and clients. Cleanups stop it.
func (h *haCluster) newReplica(t *testing.T, dir string, i int) *haReplica {
	t.Helper()
	r := &haReplica{index: i, name: fmt.Sprintf("replica-%d", i), port: haFreePort(t)}
	r.logPath = filepath.Join(dir, r.name+".log")
	r.args = append(planeServerArgs(r.port),
		"--etcd-servers="+h.etcd.clientURLs(),
		"--leader-elect=true",
		"--leader-elect-resource-name="+h.leaseName,
		"--leader-elect-resource-namespace=kube-system",
		"--leader-elect-lease-duration="+haLeaseDuration.String(),
		"--leader-elect-renew-deadline="+haRenewDeadline.String(),
		"--leader-elect-retry-period="+haRetryPeriod.String(),
	)
	r.args = append(r.args, haEtcdClientFlags()...)
	r.config = &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", r.port),
		TLSClientConfig: rest.TLSClientConfig{
			CertFile: filepath.Join(certsDir, "admin.crt"),
			KeyFile:  filepath.Join(certsDir, "admin.key"),
			CAFile:   filepath.Join(certsDir, "ca.crt"),
		},
		QPS:       200,
		Burst:     400,
		Timeout:   30 * time.Second,
		UserAgent: "e2e-ha-test",
	}
	var err error
	if r.client, err = versioned.NewForConfig(r.config); err != nil {
		t.Fatal(err)
	}
	if r.http, err = rest.HTTPClientFor(r.config); err != nil {
		t.Fatal(err)
	}
	haPrintLogsOnFailure(t, r.logPath)
	t.Cleanup(func() {
		if r.proc != nil && !r.proc.exited() {
			start := time.Now()
			r.proc.stop()
			t.Logf("%s stopped in %s", r.name, time.Since(start).Round(time.Millisecond))
		}
	})
	return r
}

// planeServerArgs are the flags that make a sandbox-apiserver serve on port behind the local
// control plane (its certificates and kubeconfig), without storage flags.
func planeServerArgs(port int) []string {
	kc := filepath.Join(repoRoot, "_output/local/kubeconfigs/sandbox-apiserver.kubeconfig")
	return []string{
		fmt.Sprintf("--secure-port=%d", port),
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + filepath.Join(certsDir, "sandbox-apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(certsDir, "sandbox-apiserver.key"),
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
	}
}

// start starts the replica's process; waitReady waits until it serves.
func (r *haReplica) start(t *testing.T) {
	t.Helper()
	r.proc = haStartProcess(t, r.name, r.logPath, filepath.Join(repoRoot, "_output/bin/sandbox-apiserver"), r.args...)
}

// waitReady polls the replica's /readyz with the admin certificate.
func (r *haReplica) waitReady(t *testing.T) {
	t.Helper()
	start := time.Now()
	haPoll(t, 2*time.Minute, 200*time.Millisecond, r.name+" ready", func() (bool, string) {
		if r.proc.exited() {
			t.Fatalf("%s exited during start-up:\n%s", r.name, indent(haLogTail(r.logPath, 40)))
		}
		body, code, err := r.get(context.Background(), "/readyz")
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK && strings.TrimSpace(body) == "ok", fmt.Sprintf("%d %s", code, body)
	})
	t.Logf("%s ready on https://127.0.0.1:%d after %s", r.name, r.port, time.Since(start).Round(time.Millisecond))
}

// get sends a GET for path to the replica.
func (r *haReplica) get(ctx context.Context, path string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.config.Host+path, nil)
	resp, err := r.http.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode, err
}

// leaderMetric reads sandbox_controller_leader from the replica's /metrics.
func (r *haReplica) leaderMetric(ctx context.Context) (float64, error) {
	return haMetric(ctx, r.http, r.config.Host+"/metrics", "sandbox_controller_leader")
}

// haMetric fetches a Prometheus text page and returns the value of an unlabelled sample.
func haMetric(ctx context.Context, client *http.Client, url, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == name {
			return strconv.ParseFloat(f[1], 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("GET %s: no sample %s", url, name)
}

// haWatch is a watch of the namespace's sandboxes through one replica, recording every event.
type haWatch struct {
	replica *haReplica
	mu      sync.Mutex
	events  []watch.Event
	closed  bool
	notify  chan struct{}
}

// haStartWatch watches sandboxes in ns through r from resourceVersion rv until the test ends.
func haStartWatch(t *testing.T, r *haReplica, ns, rv string) *haWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := r.client.AgentsV1beta1().Sandboxes(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		cancel()
		t.Fatalf("watching sandboxes through %s: %v", r.name, err)
	}
	hw := &haWatch{replica: r, notify: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			hw.mu.Lock()
			hw.events = append(hw.events, e)
			hw.mu.Unlock()
			select {
			case hw.notify <- struct{}{}:
			default:
			}
		}
		hw.mu.Lock()
		hw.closed = ctx.Err() == nil // ended by the server, not by the test
		hw.mu.Unlock()
		select {
		case hw.notify <- struct{}{}:
		default:
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return hw
}

// waitFor waits up to a minute for an event that match accepts.
func (w *haWatch) waitFor(t *testing.T, what string, match func(watch.Event) bool) {
	t.Helper()
	switch found, closed, n := w.waitUntil(time.Minute, match); {
	case found:
		t.Logf("watch through %s saw %s", w.replica.name, what)
	case closed:
		t.Fatalf("watch through %s ended (after %d events) before %s", w.replica.name, n, what)
	default:
		t.Fatalf("watch through %s: no event for %s within a minute (%d events)", w.replica.name, what, n)
	}
}

// waitUntil waits up to timeout for an event that match accepts; it reports whether one came,
// whether the watch ended first and how many events it has seen.
func (w *haWatch) waitUntil(timeout time.Duration, match func(watch.Event) bool) (found, closed bool, n int) {
	expired := time.After(timeout)
	for {
		w.mu.Lock()
		found = slices.ContainsFunc(w.events, match)
		closed, n = w.closed, len(w.events)
		w.mu.Unlock()
		if found || closed {
			return found, closed, n
		}
		select {
		case <-w.notify:
		case <-expired:
			return false, false, n
		}
	}
}

// summary returns the number of events and what went wrong: error events, an end by the server.
func (w *haWatch) summary() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var problems []string
	for _, e := range w.events {
		if e.Type == watch.Error {
			problems = append(problems, fmt.Sprintf("error event: %v", apierrors.FromObject(e.Object)))
		}
	}
	if w.closed {
		problems = append(problems, "ended by the server")
	}
	return len(w.events), problems
}

// haTraffic is a user reading and writing through both replicas in turn: a get and a label
// patch of a template and a list of sandboxes per round.
type haTraffic struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	n       int
	errs    []string
	maxTook time.Duration
	slowOp  string
}

func haStartTraffic(t *testing.T, h *haCluster, template string) *haTraffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &haTraffic{cancel: cancel, done: make(chan struct{})}
	t.Cleanup(tr.stop)
	go func() {
		defer close(tr.done)
		for i := 0; ctx.Err() == nil; i++ {
			r := h.replicas[i%len(h.replicas)]
			templates := r.client.ExtensionsV1beta1().SandboxTemplates(h.ns)
			tr.do(ctx, r, "get template", func(ctx context.Context) error {
				_, err := templates.Get(ctx, template, metav1.GetOptions{})
				return err
			})
			tr.do(ctx, r, "patch template", func(ctx context.Context) error {
				patch := fmt.Appendf(nil, `{"metadata":{"labels":{"round":"%d"}}}`, i)
				_, err := templates.Patch(ctx, template, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			})
			tr.do(ctx, r, "list sandboxes", func(ctx context.Context) error {
				_, err := r.client.AgentsV1beta1().Sandboxes(h.ns).List(ctx, metav1.ListOptions{})
				return err
			})
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return tr
}

// do runs one request and records its outcome; a request cut short by stop does not count.
func (tr *haTraffic) do(ctx context.Context, r *haReplica, op string, req func(context.Context) error) {
	if ctx.Err() != nil {
		return
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := req(rctx)
	cancel()
	took := time.Since(start)
	if ctx.Err() != nil {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.n++
	what := fmt.Sprintf("%s %s through %s", start.UTC().Format("15:04:05.000"), op, r.name)
	if err != nil {
		tr.errs = append(tr.errs, fmt.Sprintf("%s: %v", what, err))
	}
	if took > tr.maxTook {
		tr.maxTook, tr.slowOp = took, what
	}
}

func (tr *haTraffic) stop() {
	tr.cancel()
	<-tr.done
}

func (tr *haTraffic) counts() (requests, errors int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.n, len(tr.errs)
}

func (tr *haTraffic) errorList() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.errs)
}

func (tr *haTraffic) slowest() (float64, string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.maxTook.Seconds(), tr.slowOp
}
