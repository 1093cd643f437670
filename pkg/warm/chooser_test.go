// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package warm

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

const (
	testNS       = "default"
	testTemplate = "python"
	testPool     = "fast-pool"
)

// testPoolObject is the pool of the test template the members' controller references name.
var testPoolObject = poolOf(testPool, testTemplate)

// poolOf is a pool of template.
func poolOf(name, template string) *extensionsv1beta1.SandboxWarmPool {
	return &extensionsv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID(name + "-uid")},
		Spec:       extensionsv1beta1.SandboxWarmPoolSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: template}},
	}
}

// member is a member of the test pool, of the test template, Ready or still starting.
func member(name string, ready bool) *agentsv1beta1.Sandbox {
	sb := &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{
		Namespace: testNS, Name: name, UID: types.UID(name + "-uid"), ResourceVersion: "11",
		Labels: map[string]string{
			extensionsv1beta1.WarmPoolSandboxLabel:        objectmeta.NameHash(testPool),
			extensionsv1beta1.SandboxTemplateRefHashLabel: objectmeta.NameHash(testTemplate),
		},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: extensionsv1beta1.SchemeGroupVersion.String(), Kind: "SandboxWarmPool",
			Name: testPool, UID: testPoolObject.UID, Controller: ptr.To(true)}},
	}}
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&sb.Status.Conditions, metav1.Condition{Type: sandboxReadyKey, Status: status, Reason: "Test"})
	return sb
}

// startChooser runs a spreading Chooser on informers over a fake API holding the test pool and
// sandboxes, synced.
func startChooser(t *testing.T, sandboxes ...*agentsv1beta1.Sandbox) *Chooser {
	t.Helper()
	return startChooserWith(t, []*extensionsv1beta1.SandboxWarmPool{testPoolObject}, sandboxes...)
}

// startChooserWith is startChooser with these pools.
func startChooserWith(t *testing.T, pools []*extensionsv1beta1.SandboxWarmPool, sandboxes ...*agentsv1beta1.Sandbox) *Chooser {
	t.Helper()
	client := fake.NewSimpleClientset()
	for _, p := range pools {
		if err := client.Tracker().Create(extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxwarmpools"), p, testNS); err != nil {
			t.Fatal(err)
		}
	}
	for _, sb := range sandboxes {
		// The tracker would guess the resource "sandboxs" from the kind.
		if err := client.Tracker().Create(agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes"), sb, sb.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	inf := externalversions.NewSharedInformerFactory(client, 0)
	c, err := New(Config{
		Sandboxes: inf.Agents().V1beta1().Sandboxes(),
		Templates: inf.Extensions().V1beta1().SandboxTemplates(),
		WarmPools: inf.Extensions().V1beta1().SandboxWarmPools(),
		Events:    record.NewFakeRecorder(100),
		Spread:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); inf.Shutdown() })
	inf.Start(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !c.WaitSynced(ctx) {
		t.Fatal("caches not synced")
	}
	return c
}

// TestSpreadingChooserOffersEachMemberOnce: a spreading chooser, fed by its informers, offers each
// Ready member to one claim, whichever of the first candidates it starts at, then the member
// still starting, then has nothing left; a member taken elsewhere is not offered again.
func TestSpreadingChooserOffersEachMemberOnce(t *testing.T) {
	members := []string{"m1", "m2", "m3", "m4", "m5"}
	sandboxes := []*agentsv1beta1.Sandbox{member("busy", false)}
	for _, m := range members {
		sandboxes = append(sandboxes, member(m, true))
	}
	c := startChooser(t, sandboxes...)

	got := map[string]string{}
	taken := "m3" // adopted elsewhere since the cache saw it
	for i := range len(members) + 1 {
		claim := &extensionsv1beta1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: fmt.Sprintf("c%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: testTemplate}},
		}
		took, err := c.Offer(claim, extensionsv1beta1.WarmPoolPolicyDefault, 4, func(_ string, candidate *agentsv1beta1.Sandbox) (bool, error) {
			if candidate.Name == taken {
				return true, nil
			}
			if prev, ok := got[candidate.Name]; ok {
				t.Errorf("member %s offered to %s after %s", candidate.Name, claim.Name, prev)
			}
			got[candidate.Name] = claim.Name
			return false, nil
		})
		if err != nil {
			t.Fatalf("claim %s: %v", claim.Name, err)
		}
		if want := i < len(members); took != want {
			t.Errorf("claim %s took = %v, want %v", claim.Name, took, want)
		}
	}
	if len(got) != len(members) {
		t.Errorf("taken members %v, want every Ready member but %s, and busy", got, taken)
	}
	if last := fmt.Sprintf("c%d", len(members)-1); got["busy"] != last {
		t.Errorf("the starting member went to %q, want %s, after every Ready member", got["busy"], last)
	}
}

// TestChooserChecksThePoolsTemplate: a template whose name has the test template's 32-bit hash,
// and a pool of it, which anyone who may make both can arrange, put members in the test
// template's bucket. A claim of the test template is never offered them, whichever pool policy
// it names, and they keep their place for the claims of their own template, which take them.
func TestChooserChecksThePoolsTemplate(t *testing.T) {
	const collidingTemplate, collidingPool = "tmpl-ad1ewu5h", "colliding-pool"
	if objectmeta.NameHash(collidingTemplate) != objectmeta.NameHash(testTemplate) {
		t.Fatalf("%s no longer hashes as %s", collidingTemplate, testTemplate)
	}
	colliding := member("c1", true)
	colliding.Labels[extensionsv1beta1.WarmPoolSandboxLabel] = objectmeta.NameHash(collidingPool)
	colliding.OwnerReferences[0].Name, colliding.OwnerReferences[0].UID = collidingPool, collidingPool+"-uid"
	colliding.Annotations = map[string]string{agentsv1beta1.SandboxTemplateRefAnnotation: collidingTemplate}
	c := startChooserWith(t, []*extensionsv1beta1.SandboxWarmPool{testPoolObject, poolOf(collidingPool, collidingTemplate)},
		colliding, member("m1", true))

	offered := func(template string, policy extensionsv1beta1.WarmPoolPolicy) []string {
		claim := &extensionsv1beta1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "claim", UID: "claim-uid"},
			Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: template}},
		}
		var got []string
		if _, err := c.Offer(claim, policy, 4, func(_ string, candidate *agentsv1beta1.Sandbox) (bool, error) {
			got = append(got, candidate.Name)
			return false, nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := offered(testTemplate, collidingPool); len(got) != 0 {
		t.Errorf("a claim of %s naming the colliding pool was offered %q, want nothing", testTemplate, got)
	}
	if got := offered(testTemplate, extensionsv1beta1.WarmPoolPolicyDefault); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("a claim of %s was offered %q, want its own pool's m1", testTemplate, got)
	}
	if got := offered(testTemplate, extensionsv1beta1.WarmPoolPolicyDefault); len(got) != 0 {
		t.Errorf("a second claim of %s was offered %q, want nothing", testTemplate, got)
	}
	if got := offered(collidingTemplate, extensionsv1beta1.WarmPoolPolicyDefault); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("a claim of %s was offered %q, want its pool's c1", collidingTemplate, got)
	}
}

// TestChooserKeepsMembersOfTheirOwnTemplate: a member kept after its pool moved to another
// template (OnReplenish) still serves claims of the template it was made from, and not the
// pool's new one.
func TestChooserKeepsMembersOfTheirOwnTemplate(t *testing.T) {
	const newTemplate = "other"
	kept := member("m1", true)
	kept.Annotations = map[string]string{agentsv1beta1.SandboxTemplateRefAnnotation: testTemplate}
	c := startChooserWith(t, []*extensionsv1beta1.SandboxWarmPool{poolOf(testPool, newTemplate)}, kept)
	offered := func(template string) []string {
		claim := &extensionsv1beta1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "claim", UID: "claim-uid"},
			Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: template}},
		}
		var got []string
		if _, err := c.Offer(claim, extensionsv1beta1.WarmPoolPolicyDefault, 4, func(_ string, candidate *agentsv1beta1.Sandbox) (bool, error) {
			got = append(got, candidate.Name)
			return false, nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := offered(newTemplate); len(got) != 0 {
		t.Errorf("a claim of the pool's new template %s was offered %q, want nothing", newTemplate, got)
	}
	if got := offered(testTemplate); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("a claim of %s was offered %q, want the member made from it, m1", testTemplate, got)
	}
}
