// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// callers are everyone who writes Sandboxes: only the first is the server's own controllers.
func callers(id *trust.ControllerIdentity) []struct {
	name        string
	ctx         context.Context
	controllers bool
} {
	as := func(u user.Info) context.Context {
		return genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "ns"), u)
	}
	return []struct {
		name        string
		ctx         context.Context
		controllers bool
	}{
		{"the controllers", id.WithUser(genericapirequest.WithNamespace(context.Background(), "ns")), true},
		{"a cluster admin", as(&user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}), false},
		{"a namespace editor", as(&user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}), false},
		{"system:apiserver impersonated", as(&user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}), false},
		{"the controllers' name impersonated", as(&user.DefaultInfo{Name: trust.ControllerUserName, UID: "guessed", Groups: []string{user.SystemPrivilegedGroup}}), false},
		{"nobody authenticated", genericapirequest.WithNamespace(context.Background(), "ns"), false},
	}
}

func validSandbox() *agents.Sandbox {
	return &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns", ResourceVersion: "1", Labels: map[string]string{"team": "a"}},
		Spec: agents.SandboxSpec{
			PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}},
			Replicas:    ptr.To[int32](1),
		},
	}
}

func poolRef(controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxWarmPool", Name: "pool", UID: "pool-uid", Controller: ptr.To(controller)}
}

func forbiddenFields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		if e.Type != field.ErrorTypeForbidden {
			continue
		}
		out = append(out, e.Field)
	}
	slices.Sort(out)
	return out
}

func TestStrategyReservesTrustMarks(t *testing.T) {
	id := trust.NewControllerIdentity()
	strategy, statusStrategy := NewStrategy(nil, "", id)
	cases := []struct {
		name string
		// old is nil for a create.
		old    func() *agents.Sandbox
		mutate func(*agents.Sandbox)
		status bool
		// want are the fields refused to anyone but the controllers.
		want []string
	}{
		{name: "plain labels and the pod-name annotation are anyone's", mutate: func(s *agents.Sandbox) {
			s.Annotations = map[string]string{"agents.x-k8s.io/pod-name": "p"}
			s.Spec.PodTemplate.ObjectMeta.Annotations = map[string]string{"agents.x-k8s.io/pod-name": "p"}
		}},
		{name: "warm-pool membership and template labels", mutate: func(s *agents.Sandbox) {
			s.Labels["agents.x-k8s.io/warm-pool-sandbox"] = "abc"
			s.Labels["agents.x-k8s.io/sandbox-template-ref-hash"] = "def"
			s.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"agents.x-k8s.io/sandbox-pod-template-hash": "1", "agents.x-k8s.io/claim-uid": "u"}
		}, want: []string{
			"metadata.labels[agents.x-k8s.io/sandbox-template-ref-hash]", "metadata.labels[agents.x-k8s.io/warm-pool-sandbox]",
			"spec.podTemplate.metadata.labels[agents.x-k8s.io/claim-uid]", "spec.podTemplate.metadata.labels[agents.x-k8s.io/sandbox-pod-template-hash]",
		}},
		{name: "a future mark of the domain and the template annotation", mutate: func(s *agents.Sandbox) {
			s.Labels["agents.x-k8s.io/future-mark"] = "x"
			s.Annotations = map[string]string{"agents.x-k8s.io/sandbox-template-ref": "t"}
		}, want: []string{"metadata.annotations[agents.x-k8s.io/sandbox-template-ref]", "metadata.labels[agents.x-k8s.io/future-mark]"}},
		{name: "the keys the server writes itself whatever a request says", mutate: func(s *agents.Sandbox) {
			s.Labels["agents.x-k8s.io/launch-type"] = "warm"
			s.Annotations = map[string]string{"agents.x-k8s.io/namespace-uid": "u"}
		}},
		{name: "a controller reference to a pool", mutate: func(s *agents.Sandbox) {
			s.OwnerReferences = []metav1.OwnerReference{poolRef(true)}
		}, want: []string{"metadata.ownerReferences[0]"}},
		{name: "a controller reference to a claim", mutate: func(s *agents.Sandbox) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "extensions.agents.x-k8s.io/v1alpha1", Kind: "SandboxClaim", Name: "c", UID: "u", Controller: ptr.To(true)}}
		}, want: []string{"metadata.ownerReferences[0]"}},
		{name: "a plain owner reference to a pool is not a controller's", mutate: func(s *agents.Sandbox) {
			s.OwnerReferences = []metav1.OwnerReference{poolRef(false)}
		}},
		{name: "changing the membership label on update", old: func() *agents.Sandbox {
			s := validSandbox()
			s.Labels["agents.x-k8s.io/warm-pool-sandbox"] = "abc"
			return s
		}, mutate: func(s *agents.Sandbox) {
			s.Labels["agents.x-k8s.io/warm-pool-sandbox"] = "other"
		}, want: []string{"metadata.labels[agents.x-k8s.io/warm-pool-sandbox]"}},
		{name: "removing the claim's controller reference on update", old: func() *agents.Sandbox {
			s := validSandbox()
			s.OwnerReferences = []metav1.OwnerReference{poolRef(true)}
			return s
		}, mutate: func(s *agents.Sandbox) { s.OwnerReferences = nil }, want: []string{"metadata.ownerReferences"}},
		{name: "an update keeping the controllers' marks is anyone's", old: func() *agents.Sandbox {
			s := validSandbox()
			s.Labels["agents.x-k8s.io/warm-pool-sandbox"] = "abc"
			s.OwnerReferences = []metav1.OwnerReference{poolRef(true)}
			return s
		}, mutate: func(s *agents.Sandbox) { s.Labels["team"] = "b" }},
		{name: "a controller reference added through status", status: true, old: validSandbox, mutate: func(s *agents.Sandbox) {
			s.OwnerReferences = []metav1.OwnerReference{poolRef(true)}
		}, want: []string{"metadata.ownerReferences[0]"}},
	}
	// A controller reference to our kinds is a mark under any apiVersion, and in any case.
	for _, v := range []string{"extensions.agents.x-k8s.io/v9", "v1", "extension.agents.x-k8s.io/v1beta1", "apps/v1"} {
		for _, kind := range []string{"SandboxWarmPool", "SandboxClaim", "sandboxclaim"} {
			cases = append(cases, struct {
				name   string
				old    func() *agents.Sandbox
				mutate func(*agents.Sandbox)
				status bool
				want   []string
			}{name: "a controller reference to a " + kind + " of " + v, mutate: func(s *agents.Sandbox) {
				s.OwnerReferences = []metav1.OwnerReference{{APIVersion: v, Kind: kind, Name: "x", UID: types.UID("u"), Controller: ptr.To(true)}}
			}, want: []string{"metadata.ownerReferences[0]"}})
		}
	}
	for _, tc := range cases {
		for _, caller := range callers(id) {
			t.Run(tc.name+"/"+caller.name, func(t *testing.T) {
				obj := validSandbox()
				var old *agents.Sandbox
				if tc.old != nil {
					old = tc.old()
					obj = old.DeepCopy()
				}
				tc.mutate(obj)
				var errs field.ErrorList
				switch {
				case tc.status:
					statusStrategy.PrepareForUpdate(caller.ctx, obj, old)
					errs = statusStrategy.ValidateUpdate(caller.ctx, obj, old)
				case old != nil:
					strategy.PrepareForUpdate(caller.ctx, obj, old)
					errs = strategy.ValidateUpdate(caller.ctx, obj, old)
				default:
					strategy.PrepareForCreate(caller.ctx, obj)
					errs = strategy.Validate(caller.ctx, obj)
				}
				want := tc.want
				if caller.controllers {
					want = nil
				}
				if got := forbiddenFields(errs); !slices.Equal(got, want) {
					t.Errorf("forbidden fields %q, want %q (all errors: %v)", got, want, errs)
				}
				if len(errs) != len(forbiddenFields(errs)) {
					t.Errorf("errors besides the reserved marks: %v", errs)
				}
			})
		}
	}
}
