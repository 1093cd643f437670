// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxstream

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	restclient "k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

var testGV = schema.GroupVersion{Group: agents.GroupName, Version: "v1beta1"}

func decode(t *testing.T, query string, into runtime.Object) error {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme, testGV); err != nil {
		t.Fatal(err)
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.NewParameterCodec(scheme).DecodeParameters(values, testGV, into)
}

// TestDecodeQuery: the query parameters of the pods/* counterparts decode into their options.
func TestDecodeQuery(t *testing.T) {
	exec := &corev1.PodExecOptions{}
	if err := decode(t, "command=sh&command=-c&command=echo+hi&stdin=true&stdout=1&stderr=false&tty=&container=main", exec); err != nil {
		t.Fatal(err)
	}
	want := &corev1.PodExecOptions{Command: []string{"sh", "-c", "echo hi"}, Stdin: true, Stdout: true, TTY: true, Container: "main"}
	if !reflect.DeepEqual(exec, want) {
		t.Errorf("exec options = %+v; want %+v", exec, want)
	}
	logs := &corev1.PodLogOptions{}
	if err := decode(t, "follow=true&tailLines=10&limitBytes=100&sinceTime=2026-01-02T03:04:05Z&timestamps=true&stream=Stdout&previous=true", logs); err != nil {
		t.Fatal(err)
	}
	if !logs.Follow || *logs.TailLines != 10 || *logs.LimitBytes != 100 || logs.SinceTime.Year() != 2026 || !logs.Timestamps || *logs.Stream != "Stdout" || !logs.Previous {
		t.Errorf("log options = %+v", logs)
	}
	pf := &corev1.PodPortForwardOptions{}
	if err := decode(t, "ports=8080&ports=9090", pf); err != nil || !reflect.DeepEqual(pf.Ports, []int32{8080, 9090}) {
		t.Errorf("portforward options = %+v, %v; want ports 8080 and 9090", pf, err)
	}
	for query, field := range map[string]string{"tailLines=ten": "tailLines", "sinceSeconds=1.5": "sinceSeconds", "sinceTime=yesterday": "sinceTime"} {
		err := decode(t, query, &corev1.PodLogOptions{})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), field) {
			t.Errorf("log query %q: %v; want a 400 naming %s", query, err, field)
		}
	}
	for _, p := range []string{"0", "65536", "http"} {
		err := decode(t, "ports="+p, &corev1.PodPortForwardOptions{})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "ports[0]") {
			t.Errorf("ports=%s: %v; want a 400 naming ports[0]", p, err)
		}
	}
}

// TestValidate: what the pod's subresource would refuse, and what carries trust, is refused by
// field.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		what  string
		field string
		got   func() []string
	}{
		{what: "exec without a command", field: "command", got: func() []string {
			return fieldsOf(validateExec(&corev1.PodExecOptions{Stdout: true}))
		}},
		{what: "exec without any stream", field: "stdout", got: func() []string {
			return fieldsOf(validateExec(&corev1.PodExecOptions{Command: []string{"true"}}))
		}},
		{what: "log skipping TLS verification", field: "insecureSkipTLSVerifyBackend", got: func() []string {
			return fieldsOf(validateLog(&corev1.PodLogOptions{InsecureSkipTLSVerifyBackend: true}))
		}},
		{what: "log with negative tailLines", field: "tailLines", got: func() []string {
			return fieldsOf(validateLog(&corev1.PodLogOptions{TailLines: ptr.To[int64](-1)}))
		}},
		{what: "log with both since", field: "sinceTime", got: func() []string {
			return fieldsOf(validateLog(&corev1.PodLogOptions{SinceSeconds: ptr.To[int64](5), SinceTime: &metav1.Time{}}))
		}},
		{what: "log of an unknown stream", field: "stream", got: func() []string {
			return fieldsOf(validateLog(&corev1.PodLogOptions{Stream: ptr.To("Stdin")}))
		}},
	} {
		if got := tc.got(); len(got) != 1 || got[0] != tc.field {
			t.Errorf("%s: errors on %v; want one on %s", tc.what, got, tc.field)
		}
	}
	if errs := validateExec(&corev1.PodExecOptions{Command: []string{"true"}, Stdin: true}); len(errs) != 0 {
		t.Errorf("a valid exec query: %v", errs)
	}
}

// TestContainerOf: the requested container must be the pod's; none requested: the default-container
// annotation when it names one, else the first.
func TestContainerOf(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "agent"}, {Name: "sidecar"}},
		InitContainers: []corev1.Container{{Name: "init"}},
	}}
	annotated := pod.DeepCopy()
	annotated.Annotations = map[string]string{DefaultContainerAnnotation: "sidecar"}
	stale := pod.DeepCopy()
	stale.Annotations = map[string]string{DefaultContainerAnnotation: "gone"}
	kind := agents.Kind("Sandbox")
	for _, tc := range []struct {
		pod       *corev1.Pod
		requested string
		want      string
	}{
		{pod, "", "agent"},
		{pod, "agent", "agent"},
		{annotated, "", "sidecar"},
		{annotated, "sidecar", "sidecar"},
		{stale, "", "agent"},
	} {
		if got, err := containerOf(kind, "sb", tc.pod, tc.requested); err != nil || got != tc.want {
			t.Errorf("container %q of %v: %q, %v; want %q", tc.requested, tc.pod.Annotations, got, err, tc.want)
		}
	}
	// Only the one container the sandbox opens: never a sidecar, an init container or another
	// name, even one of the pod's.
	for _, tc := range []struct {
		pod       *corev1.Pod
		requested string
	}{{pod, "sidecar"}, {pod, "init"}, {pod, "other"}, {annotated, "agent"}, {stale, "gone"}} {
		_, err := containerOf(kind, "sb", tc.pod, tc.requested)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "container: Unsupported value: \""+tc.requested+"\"") {
			t.Errorf("container %q of %v: %v; want a 422 naming container", tc.requested, tc.pod.Annotations, err)
		}
	}
}

// TestPodOf: only the pod the Sandbox's UID controls is reached.
func TestPodOf(t *testing.T) {
	sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: "sandbox-uid"}}
	owned := func(uid types.UID) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: "sb", UID: uid, Controller: ptr.To(true)},
		}}}
	}
	kube, err := newKubeAPI(&restclient.Config{Host: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod     *corev1.Pod
		refusal string
	}{
		{owned("sandbox-uid"), ""},
		{owned("another-uid"), "is not controlled by it"},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb"}}, "is not controlled by it"},
		{nil, "its pod does not exist"},
	} {
		s := &Streams{kube: kube, Config: Config{Pods: func(_, _ string) (*corev1.Pod, error) { return tc.pod, nil }}}
		_, err := s.podOf(sb)
		if tc.refusal == "" {
			if err != nil {
				t.Errorf("the sandbox's own pod: %v", err)
			}
			continue
		}
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusServiceUnavailable || !strings.Contains(err.Error(), tc.refusal) {
			t.Errorf("pod %v: %v; want a 503 saying %q", tc.pod, err, tc.refusal)
		}
	}
}

// recordingAuthorizer answers with allow and records what it was asked.
type recordingAuthorizer struct {
	allow bool
	asked []authorizer.Attributes
}

func (a *recordingAuthorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.asked = append(a.asked, attrs)
	if a.allow {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no rule", nil
}

// TestAuthorizeCreate: a request authorized as get (a WebSocket GET) is asked again as create on
// the same subresource, for the same user; one authorized as create is not asked again.
func TestAuthorizeCreate(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"tenants"}}
	request := func(verb string) context.Context {
		ctx := genericapirequest.WithUser(context.Background(), alice)
		return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
			IsResourceRequest: true, Verb: verb, APIGroup: "extensions.agents.x-k8s.io", APIVersion: "v1beta1",
			Namespace: "ns", Resource: "sandboxclaims", Subresource: "exec", Name: "mine",
		})
	}
	for _, allow := range []bool{true, false} {
		authz := &recordingAuthorizer{allow: allow}
		s := &Streams{Config: Config{Authorizer: authz}}
		err := s.authorizeCreate(request("get"))
		if len(authz.asked) != 1 {
			t.Fatalf("a GET was authorized %d more times; want once", len(authz.asked))
		}
		a := authz.asked[0]
		if a.GetVerb() != "create" || a.GetResource() != "sandboxclaims" || a.GetSubresource() != "exec" || a.GetName() != "mine" ||
			a.GetNamespace() != "ns" || a.GetAPIGroup() != "extensions.agents.x-k8s.io" || a.GetUser().GetName() != "alice" || !a.IsResourceRequest() {
			t.Errorf("asked %+v; want create on sandboxclaims/exec mine in ns for alice", a)
		}
		if allow && err != nil {
			t.Errorf("allowed: %v", err)
		}
		if !allow && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot create resource "sandboxclaims/exec"`)) {
			t.Errorf("denied: %v; want a 403 for create on sandboxclaims/exec", err)
		}
	}
	authz := &recordingAuthorizer{}
	if err := (&Streams{Config: Config{Authorizer: authz}}).authorizeCreate(request("create")); err != nil || len(authz.asked) != 0 {
		t.Errorf("a POST (create) was asked again (%d) or refused (%v)", len(authz.asked), err)
	}
}

// TestProtocolHeaders: only the headers that negotiate the stream reach the cluster; the caller's
// identity does not.
func TestProtocolHeaders(t *testing.T) {
	in := http.Header{
		"Upgrade": {"websocket"}, "Connection": {"Upgrade"}, "Sec-Websocket-Protocol": {"v5.channel.k8s.io"},
		"Sec-Websocket-Key": {"k"}, "Sec-Websocket-Version": {"13"}, "X-Stream-Protocol-Version": {"v4.channel.k8s.io"},
		"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}, "Authorization": {"Bearer t"},
		"Impersonate-User": {"admin"}, "Cookie": {"c"}, "X-Forwarded-For": {"10.0.0.1"},
	}
	got := protocolHeaders(in)
	want := http.Header{
		"Upgrade": {"websocket"}, "Connection": {"Upgrade"}, "Sec-Websocket-Protocol": {"v5.channel.k8s.io"},
		"Sec-Websocket-Key": {"k"}, "Sec-Websocket-Version": {"13"}, "X-Stream-Protocol-Version": {"v4.channel.k8s.io"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("forwarded headers %v; want %v", got, want)
	}
}

// TestLocation: the pod's subresource, with the query encoded from the parsed options only.
func TestLocation(t *testing.T) {
	kube, err := newKubeAPI(&restclient.Config{Host: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb"}}
	u, err := kube.location(pod, "exec", &corev1.PodExecOptions{Command: []string{"sh", "-c", "a&b"}, Stdout: true, Container: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/api/v1/namespaces/ns/pods/sb/exec" || u.Host != "127.0.0.1:6443" {
		t.Errorf("location %s; want pods/sb/exec in ns on the cluster", u)
	}
	q := u.Query()
	if !reflect.DeepEqual(q["command"], []string{"sh", "-c", "a&b"}) || q.Get("stdout") != "true" || q.Get("container") != "agent" || q.Has("stdin") {
		t.Errorf("query %v", q)
	}
}

func fieldsOf(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}
