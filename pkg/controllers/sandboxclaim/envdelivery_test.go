// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// fakePodExec records the commands run in pods and answers them with err.
type fakePodExec struct {
	runs []podRun
	err  error
}

type podRun struct {
	pod        string
	controller types.UID
	container  string
	command    []string
	stdin      string
}

func (e *fakePodExec) Run(_ context.Context, _, pod string, controller types.UID, container string, command []string, stdin []byte) error {
	e.runs = append(e.runs, podRun{pod, controller, container, command, string(stdin)})
	return e.err
}

func deliverByFile(path string) func(*extensionsv1beta1.SandboxTemplate) {
	return func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.EnvVarsInjectionPolicy = extensionsv1beta1.EnvVarsInjectionPolicyAllowed
		t.Spec.EnvVarsDelivery = &extensionsv1beta1.EnvVarsDelivery{File: path, TimeoutSeconds: ptr.To[int32](5)}
	}
}

func envDelivered(c *extensionsv1beta1.SandboxClaim) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, extensionsv1beta1.ClaimConditionEnvDelivered)
}

func containerEnvOf(sb *agentsv1beta1.Sandbox, container string) []corev1.EnvVar {
	for _, c := range sb.Spec.PodTemplate.Spec.Containers {
		if c.Name == container {
			return c.Env
		}
	}
	return nil
}

// TestAdoptWithEnv: a claim with env takes a running member, whatever pool it names; the values go
// into the sandbox's pod template (for exec, and for a pod made again), and without a delivery
// the claim is Ready at once.
func TestAdoptWithEnv(t *testing.T) {
	for _, policy := range []*extensionsv1beta1.WarmPoolPolicy{nil, ptr.To(extensionsv1beta1.WarmPoolPolicyDefault), ptr.To(extensionsv1beta1.WarmPoolPolicy(testPool))} {
		name := "unset"
		if policy != nil {
			name = string(*policy)
		}
		t.Run(name, func(t *testing.T) {
			claim := newClaim(withEnv(extensionsv1beta1.EnvVar{Name: "TASK_ID", Value: "t-1"}))
			claim.Spec.WarmPool = policy
			member := warmMember("m1", testPool)
			f := newFixture(t, claim, newTemplate(envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed)), member)
			f.warm(member)

			f.mustSync(testClaim)
			updated := f.updatedSandboxes()
			if len(updated) != 1 || updated[0].Name != "m1" || len(f.createdSandboxes()) != 0 {
				t.Fatalf("writes %q, want the member m1 adopted and nothing created", f.writes())
			}
			if got := containerEnvOf(updated[0], "agent"); !slices.Equal(got, []corev1.EnvVar{{Name: "TASK_ID", Value: "t-1"}}) {
				t.Errorf("adopted pod template env = %v, want TASK_ID=t-1", got)
			}
			checkReady(t, f.lastStatus(), metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "")
			if c := envDelivered(f.lastStatus()); c != nil {
				t.Errorf("EnvDelivered = %+v on a template without envVarsDelivery, want none", c)
			}
			if len(f.exec.runs) != 0 {
				t.Errorf("ran %d deliveries, want none", len(f.exec.runs))
			}
		})
	}
}

// TestAdoptWithEnvForInitContainer: an init container of a member ran before the claim, so env
// for one needs a sandbox made for the claim.
func TestAdoptWithEnvForInitContainer(t *testing.T) {
	claim := newClaim(withEnv(extensionsv1beta1.EnvVar{Name: "MODE", Value: "x", ContainerName: "setup"}))
	member := warmMember("m1", testPool)
	template := newTemplate(envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed), func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.EnvVarsInjectionContainers = []string{"setup"}
	})
	f := newFixture(t, claim, template, member)
	f.warm(member)
	f.mustSync(testClaim)
	if len(f.updatedSandboxes()) != 0 || len(f.createdSandboxes()) != 1 {
		t.Fatalf("writes %q, want a cold sandbox and no adoption", f.writes())
	}
}

// TestEnvDeliveredToWarmMember: the template's delivery runs in the adopted member's pod, in the
// container the values are for, before the claim is Ready.
func TestEnvDeliveredToWarmMember(t *testing.T) {
	claim := newClaim(withEnv(
		extensionsv1beta1.EnvVar{Name: "TASK_ID", Value: "t-1"},
		extensionsv1beta1.EnvVar{Name: "QUOTED", Value: "it's"},
	))
	member := warmMember("m1", testPool)
	f := newFixture(t, claim, newTemplate(deliverByFile("/run/claim/env")), member)
	f.warm(member)

	f.mustSync(testClaim)
	if len(f.exec.runs) != 1 {
		t.Fatalf("ran %d deliveries, want 1", len(f.exec.runs))
	}
	run := f.exec.runs[0]
	if run.pod != "m1" || run.controller != member.UID || run.container != "agent" {
		t.Errorf("delivery ran in pod %s (controller %s), container %s; want m1 (%s), agent", run.pod, run.controller, run.container, member.UID)
	}
	if want := []string{"/bin/sh", "-c", fileDeliveryScript, "sh", "/run/claim/env"}; !slices.Equal(run.command, want) {
		t.Errorf("command = %q, want %q", run.command, want)
	}
	if want := "export QUOTED='it'\\''s'\nexport TASK_ID='t-1'\n"; run.stdin != want {
		t.Errorf("stdin = %q, want %q", run.stdin, want)
	}
	st := f.lastStatus()
	checkReady(t, st, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "")
	if c := envDelivered(st); c == nil || c.Status != metav1.ConditionTrue || c.Reason != extensionsv1beta1.EnvReasonDelivered {
		t.Errorf("EnvDelivered = %+v, want True/Delivered", c)
	}
	if !slices.Contains(f.eventReasons(), "EnvDelivered") {
		t.Errorf("events %q, want EnvDelivered", f.eventReasons())
	}
}

// TestEnvDeliveryWaitsForReady: a member still starting is adopted, and the claim says it waits
// for the delivery; nothing runs in a pod that is not Ready.
func TestEnvDeliveryWaitsForReady(t *testing.T) {
	claim := newClaim(withEnv(extensionsv1beta1.EnvVar{Name: "TASK_ID", Value: "t-1"}))
	member := warmMember("m1", testPool, sandboxReady(metav1.ConditionFalse, "DependenciesNotReady", "Pod is not Ready"))
	f := newFixture(t, claim, newTemplate(deliverByFile("/run/claim/env")), member)
	f.warm(member)
	f.mustSync(testClaim)
	if len(f.exec.runs) != 0 {
		t.Fatalf("ran %d deliveries in a pod not Ready, want none", len(f.exec.runs))
	}
	st := f.lastStatus()
	if c := envDelivered(st); c == nil || c.Status != metav1.ConditionFalse || c.Reason != extensionsv1beta1.EnvReasonPending {
		t.Errorf("EnvDelivered = %+v, want False/Pending", c)
	}
	checkReady(t, st, metav1.ConditionFalse, "DependenciesNotReady", "")
}

// TestWarmEnvDeliveryFails: a member whose delivery fails is discarded, not handed over and not
// returned to the pool; the claim then gets a sandbox made with its env (no other member), and is
// Ready once that one's delivery succeeded.
func TestWarmEnvDeliveryFails(t *testing.T) {
	claim := newClaim(withEnv(extensionsv1beta1.EnvVar{Name: "TASK_ID", Value: "t-1"}))
	m1, m2 := warmMember("m1", testPool), warmMember("m2", testPool)
	f := newFixture(t, claim, newTemplate(deliverByFile("/run/claim/env")), m1, m2)
	f.warm(m1, m2)
	f.exec.err = errors.New("exit code 1: \"sh: can't create /run/claim/env.tmp.7: Read-only file system\"")

	f.mustSync(testClaim)
	if got := f.deletes("sandboxes"); len(got) != 1 || got["m1"] != m1.UID {
		t.Fatalf("deleted %v, want the member m1 with its UID as precondition", got)
	}
	st := f.lastStatus()
	checkReady(t, st, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonEnvPending, "Delivering the env to warm sandbox m1 failed: container agent: exit code 1*")
	if c := envDelivered(st); c == nil || c.Reason != extensionsv1beta1.EnvReasonWarmFailed {
		t.Errorf("EnvDelivered = %+v, want WarmDeliveryFailed", c)
	}
	if !slices.Contains(f.eventReasons(), "EnvDeliveryFailed") {
		t.Errorf("events %q, want EnvDeliveryFailed", f.eventReasons())
	}

	// The member is gone; the claim, as written, comes back: a cold sandbox, not m2.
	adopted := f.updatedSandboxes()[0]
	f.deleteCache(adopted)
	f.updateCache(st)
	f.reset()
	f.exec.runs, f.exec.err = nil, nil
	f.mustSync(testClaim)
	created := f.createdSandboxes()
	if len(created) != 1 || created[0].Name != testClaim || len(f.updatedSandboxes()) != 0 {
		t.Fatalf("writes %q, want a cold sandbox %s and no other member adopted", f.writes(), testClaim)
	}
	if got := containerEnvOf(created[0], "agent"); !slices.Contains(got, corev1.EnvVar{Name: "TASK_ID", Value: "t-1"}) {
		t.Errorf("cold sandbox env = %v, want TASK_ID=t-1 in its pod", got)
	}
	if n := f.chooser.Queue().Len(testBucket); n != 1 {
		t.Errorf("warm queue holds %d, want m2 kept (1)", n)
	}

	// Ready, it gets the delivery too: its process reads the same file.
	cold := created[0].DeepCopy()
	cold.UID = "cold-uid"
	sandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")(cold)
	f.addCache(cold)
	f.updateCache(f.lastStatus())
	f.reset()
	f.mustSync(testClaim)
	if len(f.exec.runs) != 1 || f.exec.runs[0].pod != testClaim {
		t.Fatalf("deliveries %+v, want one to pod %s", f.exec.runs, testClaim)
	}
	st = f.lastStatus()
	checkReady(t, st, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "")
	if c := envDelivered(st); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("EnvDelivered = %+v, want True", c)
	}
}

// TestColdEnvDeliveryFails: a sandbox made for the claim is kept when its delivery fails; the
// claim says why and is not Ready, and no delivery runs again until the sandbox is replaced.
func TestColdEnvDeliveryFails(t *testing.T) {
	claim := newClaim(withEnv(extensionsv1beta1.EnvVar{Name: "TASK_ID", Value: "t-1"}), warmpool(extensionsv1beta1.WarmPoolPolicyNone))
	sb := newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID),
		sandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"))
	f := newFixture(t, claim, newTemplate(deliverByFile("/run/claim/env")))
	f.exec.err = errors.New("exit code 2")
	claim.Status.Conditions = []metav1.Condition{{Type: extensionsv1beta1.ClaimConditionEnvDelivered, Status: metav1.ConditionFalse,
		Reason: extensionsv1beta1.EnvReasonPending, Message: "Waiting", ObservedGeneration: testGen}}
	f.updateCache(claim)
	f.add(sb)

	f.mustSync(testClaim)
	if d := f.deletes("sandboxes"); len(d) != 0 {
		t.Errorf("deleted %v, want the claim's own sandbox kept", d)
	}
	st := f.lastStatus()
	checkReady(t, st, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonEnvFailed, "Delivering the env to sandbox "+testClaim+" failed: container agent: exit code 2")
	f.updateCache(st)
	f.reset()
	f.exec.runs = nil
	f.mustSync(testClaim)
	if len(f.exec.runs) != 0 {
		t.Errorf("ran %d deliveries after a final failure, want none", len(f.exec.runs))
	}
}

// TestFileDeliveryScript runs the file delivery's script with the machine's sh and loads the file
// it wrote, as a sandbox's process would: every value comes back byte for byte, and the file is
// owner-only.
func TestFileDeliveryScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	env := map[string]string{
		"PLAIN": "v", "QUOTE": `it's "quoted"`, "NEWLINE": "a\nb", "DOLLAR": "$HOME `id` $(id)", "EMPTY": "",
	}
	path := filepath.Join(t.TempDir(), "new", "dir", "claim.env")
	command, stdin, err := deliveryCommand(&extensionsv1beta1.EnvVarsDelivery{File: path}, env)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, command[1:]...)
	cmd.Stdin = strings.NewReader(string(stdin))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("delivery script: %v: %s", err, out)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("file mode %o, want 600", mode)
	}
	for name, want := range env {
		out, err := exec.Command(sh, "-c", `. "$1" && printf %s "$(eval printf %s \"\${$2}\")"`, "sh", path, name).Output()
		if err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		// $(...) drops trailing newlines; none of the values has one.
		if string(out) != want {
			t.Errorf("%s = %q, want %q", name, out, want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the env file (no temporary left)", len(entries))
	}
}

// TestCommandDelivery: a command gets the container's values as one JSON object on stdin.
func TestCommandDelivery(t *testing.T) {
	command, stdin, err := deliveryCommand(&extensionsv1beta1.EnvVarsDelivery{Command: []string{"/activate", "--from-stdin"}},
		map[string]string{"B": "2", "A": "x\"y"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(command, []string{"/activate", "--from-stdin"}) {
		t.Errorf("command = %q", command)
	}
	if want := `{"A":"x\"y","B":"2"}`; string(stdin) != want {
		t.Errorf("stdin = %s, want %s", stdin, want)
	}
}
