// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

// startStandby runs a Standby on informers over a fake API holding the template and sandboxes,
// synced.
func startStandby(t *testing.T, template *extensionsv1beta1.SandboxTemplate, sandboxes ...*agentsv1beta1.Sandbox) *Standby {
	t.Helper()
	client := fake.NewSimpleClientset(template)
	for _, p := range testPools() {
		if err := client.Tracker().Create(extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxwarmpools"), p, p.Namespace); err != nil {
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
	s, err := NewStandby(StandbyConfig{
		Sandboxes: inf.Agents().V1beta1().Sandboxes(),
		Templates: inf.Extensions().V1beta1().SandboxTemplates(),
		WarmPools: inf.Extensions().V1beta1().SandboxWarmPools(),
		Events:    record.NewFakeRecorder(100),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); inf.Shutdown() })
	inf.Start(stop)
	if !cache.WaitForCacheSync(stop, s.synced...) {
		t.Fatal("caches not synced")
	}
	return s
}

// TestStandbyBindsEachMemberOnce: a standby, fed by its informers, serves each Ready member to
// one claim, whichever of the first candidates it starts at, then the member still starting, then
// has nothing left; a member that moved on (Conflict) is not offered again.
func TestStandbyBindsEachMemberOnce(t *testing.T) {
	members := []string{"m1", "m2", "m3", "m4", "m5"}
	sandboxes := []*agentsv1beta1.Sandbox{warmMember("busy", testPool, sandboxReady("False", "DependenciesNotReady", "starting"))}
	for _, m := range members {
		sandboxes = append(sandboxes, warmMember(m, testPool))
	}
	s := startStandby(t, newTemplate(), sandboxes...)

	got := map[string]string{}
	taken := "m3" // adopted elsewhere since the cache saw it
	for i := range len(members) + 1 {
		claim := newClaim(named(fmt.Sprintf("c%d", i), types.UID(fmt.Sprintf("uid-%d", i))))
		bound, err := s.BindAtCreate(context.Background(), claim, func(_ context.Context, served *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) error {
			if candidate.Name == taken {
				return apierrors.NewConflict(agentsv1beta1.Resource("sandboxes"), candidate.Name, fmt.Errorf("changed"))
			}
			if prev, ok := got[adopted.Name]; ok {
				t.Errorf("member %s offered to %s after %s", adopted.Name, served.Name, prev)
			}
			got[adopted.Name] = served.Name
			return nil
		})
		if err != nil {
			t.Fatalf("claim %s: %v", claim.Name, err)
		}
		if want := i < len(members); bound != want {
			t.Errorf("claim %s bound = %v, want %v", claim.Name, bound, want)
		}
	}
	if len(got) != len(members) {
		t.Errorf("bound members %v, want every Ready member but %s, and busy", got, taken)
	}
	if last := fmt.Sprintf("c%d", len(members)-1); got["busy"] != last {
		t.Errorf("the starting member went to %q, want %s, after every Ready member", got["busy"], last)
	}
}
