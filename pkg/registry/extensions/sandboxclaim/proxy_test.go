// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// objects is a rest.Getter over a fixed set of objects by name.
type objects map[string]runtime.Object

func (o objects) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if obj, ok := o[name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(agents.Resource("sandboxes"), name)
}

// TestProxySandboxOf: a claim proxies only to the Sandbox its status names and that it controls.
func TestProxySandboxOf(t *testing.T) {
	claim := &extensions.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mine", UID: "claim-uid"}}
	sandbox := func(name, controller string) *agents.Sandbox {
		sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
		if controller != "" {
			sb.OwnerReferences = []metav1.OwnerReference{{Kind: "SandboxClaim", Name: "x", UID: types.UID(controller), Controller: ptr.To(true)}}
		}
		return sb
	}
	r := &ProxyREST{Sandboxes: objects{
		"ours":     sandbox("ours", "claim-uid"),
		"theirs":   sandbox("theirs", "other-claim-uid"),
		"orphaned": sandbox("orphaned", ""),
	}}
	for _, tc := range []struct {
		status, want, refusal string
	}{
		{status: "ours", want: "ours"},
		{status: "", refusal: "status.sandbox.name is not set yet"},
		{status: "theirs", refusal: "is not controlled by the claim"},
		{status: "orphaned", refusal: "is not controlled by the claim"},
		{status: "gone", refusal: "does not exist"},
	} {
		c := claim.DeepCopy()
		c.Status.SandboxStatus.Name = tc.status
		sb, err := sandboxOf(context.Background(), r.Sandboxes, c)
		if tc.refusal == "" {
			if err != nil || sb.Name != tc.want {
				t.Errorf("status names %q: got %v, %v; want sandbox %s", tc.status, sb, err, tc.want)
			}
			continue
		}
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Code != http.StatusServiceUnavailable || !strings.Contains(status.Status().Message, tc.refusal) {
			t.Errorf("status names %q: got %v, %v; want a 503 saying %q", tc.status, sb, err, tc.refusal)
		}
	}
}
