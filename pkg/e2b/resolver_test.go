// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/e2b/envd"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
)

// execAuthorizer allows create on sandboxclaims/exec to the users it lists.
type execAuthorizer map[string]bool

func (a execAuthorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetVerb() == "create" && attrs.GetResource() == "sandboxclaims" && attrs.GetSubresource() == "exec" && a[attrs.GetUser().GetName()] {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no RBAC rule allows it", nil
}

// resolverFixture: tenants a (ns-a) and b (ns-b), each with a key; a claim "e2b-a" of ns-a served
// by a running Sandbox and its pod, with env for its first container and a sidecar.
func resolverFixture(t *testing.T, mutate func(*agentsv1beta1.Sandbox, *corev1.Pod)) (s *Server, keyA, keyB string) {
	t.Helper()
	keyA, _, _ = NewAPIKey()
	keyB, _, _ = NewAPIKey()
	store, _ := newKeyStore(t,
		storedKey(t, keyA, &user.DefaultInfo{Name: "alice"}, "ns-a"),
		storedKey(t, keyB, &user.DefaultInfo{Name: "bob"}, "ns-b"))
	claim := &extensionsv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "e2b-a", UID: "claim-uid"},
		Spec: extensionsv1beta1.SandboxClaimSpec{Env: []extensionsv1beta1.EnvVar{
			{Name: "FOR_MAIN", Value: "1"}, {Name: "FOR_SIDE", Value: "2", ContainerName: "side"}}},
		Status: extensionsv1beta1.SandboxClaimStatus{SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "sb-a"}},
	}
	sb := &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "sb-a", UID: "sandbox-uid",
		OwnerReferences: []metav1.OwnerReference{{Kind: "SandboxClaim", Name: "e2b-a", UID: "claim-uid", Controller: ptr.To(true)}}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "sb-a",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: "sb-a", UID: "sandbox-uid", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}, {Name: "side"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if mutate != nil {
		mutate(sb, pod)
	}
	// Created through the typed clients: the tracker guesses the resource of a Sandbox added
	// directly from the wrong version.
	admin := fake.NewSimpleClientset()
	ctx := context.Background()
	if _, err := admin.ExtensionsV1beta1().SandboxClaims("ns-a").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AgentsV1beta1().Sandboxes("ns-a").Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s = &Server{
		keys: store, signer: tokenSigner{key: []byte("0123456789abcdef0123456789abcdef")},
		admin: admin, kube: kubefake.NewSimpleClientset(pod),
		authorizer: execAuthorizer{"alice": true, "bob": true},
	}
	return s, keyA, keyB
}

// resolve resolves a request for sandbox id with the token given.
func resolve(s *Server, id, token string) (*envd.Sandbox, error) {
	req := httptest.NewRequest(http.MethodPost, "/process.Process/Start", nil)
	req.Header.Set("E2b-Sandbox-Id", id)
	if token != "" {
		req.Header.Set("X-Access-Token", token)
	}
	return resolver{s}.Resolve(req)
}

// statusOf is the HTTP status a Resolver error carries.
func statusOf(err error) int {
	var se *envd.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func TestResolver(t *testing.T) {
	s, keyA, keyB := resolverFixture(t, nil)
	idA, _ := s.keys.identity(keyA)
	idB, _ := s.keys.identity(keyB)
	tokenA := s.signer.token(idA.KeyID, "ns-a", "e2b-a", "claim-uid")

	got, err := resolve(s, "e2b-a", tokenA)
	if err != nil {
		t.Fatalf("the owner's own token: %v", err)
	}
	if got.Namespace != "ns-a" || got.Pod != "sb-a" || got.Container != "main" || got.ID != "e2b-a" || got.Key != idA.KeyID {
		t.Errorf("resolved %+v", got)
	}
	if len(got.Env) != 1 || got.Env["FOR_MAIN"] != "1" {
		t.Errorf("env %v, want the claim's entries for the first container only", got.Env)
	}

	for name, c := range map[string]struct {
		id, token string
		want      int
	}{
		"no token":    {"e2b-a", "", 401},
		"not a token": {"e2b-a", "garbage", 401},
		"forged MAC":  {"e2b-a", idA.KeyID + ".AAAA", 401},
		"a token of the claim made again (another UID)": {"e2b-a", s.signer.token(idA.KeyID, "ns-a", "e2b-a", "old-uid"), 401},
		// Tenant B's own token, for B's sandbox of A's name: A's claim is not in B's namespace.
		"another tenant's token": {"e2b-a", s.signer.token(idB.KeyID, "ns-b", "e2b-a", "claim-uid"), 404},
		"an unknown sandbox":     {"e2b-none", s.signer.token(idA.KeyID, "ns-a", "e2b-none", ""), 404},
		"an unknown key":         {"e2b-a", "0123456789abcdef0123.AAAA", 401},
	} {
		if _, err := resolve(s, c.id, c.token); statusOf(err) != c.want {
			t.Errorf("%s: %v, want status %d", name, err, c.want)
		}
	}

	// A right taken away holds once the resolution, reused for resolvedTTL, is forgotten.
	s.authorizer = execAuthorizer{}
	if _, err := resolve(s, "e2b-a", tokenA); err != nil {
		t.Errorf("a resolution is not reused within its TTL: %v", err)
	}
	s.resolved.forget("ns-a", "e2b-a")
	if _, err := resolve(s, "e2b-a", tokenA); statusOf(err) != http.StatusForbidden {
		t.Errorf("without exec rights: %v, want 403", err)
	}
}

func TestResolverTarget(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(*agentsv1beta1.Sandbox, *corev1.Pod)
		want   int
	}{
		"paused": {func(sb *agentsv1beta1.Sandbox, _ *corev1.Pod) {
			sb.Spec.OperatingMode = agentsv1beta1.OperatingModeSuspended
		}, 502},
		"pod not running":            {func(_ *agentsv1beta1.Sandbox, p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, 502},
		"pod of another Sandbox UID": {func(_ *agentsv1beta1.Sandbox, p *corev1.Pod) { p.OwnerReferences[0].UID = "other" }, 502},
		"sandbox not the claim's":    {func(sb *agentsv1beta1.Sandbox, _ *corev1.Pod) { sb.OwnerReferences[0].UID = "other" }, 502},
	} {
		s, keyA, _ := resolverFixture(t, c.mutate)
		idA, _ := s.keys.identity(keyA)
		if _, err := resolve(s, "e2b-a", s.signer.token(idA.KeyID, "ns-a", "e2b-a", "claim-uid")); statusOf(err) != c.want {
			t.Errorf("%s: %v, want status %d", name, err, c.want)
		}
	}
	// The default-container annotation names the container opened to users.
	s, keyA, _ := resolverFixture(t, func(_ *agentsv1beta1.Sandbox, p *corev1.Pod) {
		p.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "side"}
	})
	idA, _ := s.keys.identity(keyA)
	got, err := resolve(s, "e2b-a", s.signer.token(idA.KeyID, "ns-a", "e2b-a", "claim-uid"))
	if err != nil || got.Container != "side" || got.Env["FOR_SIDE"] != "2" || got.Env["FOR_MAIN"] != "" {
		t.Errorf("default container: %+v %v; want side with its own env", got, err)
	}
}
