// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

type failingResponder struct{ t *testing.T }

func (r failingResponder) Object(int, runtime.Object) { r.t.Error("unexpected object response") }
func (r failingResponder) Error(err error)            { r.t.Errorf("proxy error: %v", err) }

// countingWaker wakes nothing and counts requests begun and ended.
type countingWaker struct{ begun, ended int }

func (w *countingWaker) Wake(_ context.Context, sb *agents.Sandbox) (*agents.Sandbox, error) {
	return sb, nil
}
func (w *countingWaker) Begin(*agents.Sandbox) func() {
	w.begun++
	return func() { w.ended++ }
}

// TestConnectForwardsToThePodOnly serves the "sandbox" at an address of this machine, as a pod's,
// and proxies to it: method, body, status, path and identity arrive as the rules say.
func TestConnectForwardsToThePodOnly(t *testing.T) {
	type seen struct{ method, rawPath, body, user, auth string }
	got := make(chan seen, 1)
	pod := podServing(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), string(body), r.Header.Get(UserHeader), r.Header.Get("Authorization")}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "made")
	}))

	waker := &countingWaker{}
	p := &Proxy{Pods: func(ns, name string) (*corev1.Pod, error) { return pod, nil }, Waker: waker}
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})

	for _, path := range []string{"/items?x=1", "//evil:80/", "http://169.254.169.254/latest"} {
		handler, err := p.Connect(ctx, testSandbox(), "http", strings.SplitN(path, "?", 2)[0], failingResponder{t})
		if err != nil {
			t.Fatalf("Connect(%q): %v", path, err)
		}
		req := httptest.NewRequest(http.MethodPost, "/apis/agents.x-k8s.io/v1beta1/namespaces/team/sandboxes/box:http/proxy"+path, strings.NewReader("payload"))
		req.Header.Set("Authorization", "Bearer secret")
		// Listed in Connection, the identity header would be removed by the reverse proxy after
		// the proxy set it.
		req.Header.Set("Connection", "X-Sandbox-User")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated || rec.Body.String() != "made" {
			t.Fatalf("%s: response %d %q; want 201 \"made\"", path, rec.Code, rec.Body.String())
		}
		// The sandbox's page is served under the API's origin: sandboxed, never sniffed.
		if csp, sniff := rec.Header().Get("Content-Security-Policy"), rec.Header().Get("X-Content-Type-Options"); csp != "sandbox" || sniff != "nosniff" {
			t.Errorf("%s: Content-Security-Policy %q, X-Content-Type-Options %q; want sandbox and nosniff", path, csp, sniff)
		}
		s := <-got
		if s.method != http.MethodPost || s.body != "payload" || s.user != "alice" || s.auth != "" {
			t.Errorf("%s: the sandbox saw %+v; want POST, body payload, user alice, no Authorization", path, s)
		}
		if want := strings.SplitN(path, "?", 2)[0]; !strings.HasPrefix(s.rawPath, want) && !strings.HasPrefix(s.rawPath, "/"+want) {
			t.Errorf("the sandbox saw path %q; want %q", s.rawPath, want)
		}
	}
	if waker.begun != 3 || waker.ended != 3 {
		t.Errorf("Begin called %d times, its end %d; want 3 and 3", waker.begun, waker.ended)
	}
}

func TestConnectWithoutWakerRefusesASuspendedSandbox(t *testing.T) {
	p := &Proxy{Pods: func(string, string) (*corev1.Pod, error) { return nil, nil }}
	sb := testSandbox()
	sb.Spec.Replicas = ptr.To[int32](0)
	_, err := p.Connect(context.Background(), sb, "", "/", failingResponder{t})
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != http.StatusServiceUnavailable || !strings.Contains(status.Status().Message, "suspended") ||
		status.Status().Details.RetryAfterSeconds == 0 {
		t.Fatalf("Connect = %v; want a 503 with Retry-After saying the sandbox is suspended", err)
	}
}

// TestTransportDialsThePodItself: no HTTP proxy from the environment stands between the server and
// the pod (it would see every request, and decide where it goes).
func TestTransportDialsThePodItself(t *testing.T) {
	if tr := NewTransport(); tr.Proxy != nil {
		t.Errorf("the transport to the pods uses a proxy function")
	}
}

// recordingResponder keeps the error the proxy answered with.
type recordingResponder struct{ err chan error }

func (r recordingResponder) Object(int, runtime.Object) {}
func (r recordingResponder) Error(err error)            { r.err <- err }

// TestConnectionsPerSandboxBounded: past MaxConnectionsPerSandbox a request gets a 429 with
// Retry-After and never reaches the sandbox; once one ends, the next gets through.
func TestConnectionsPerSandboxBounded(t *testing.T) {
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	pod := podServing(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	p := &Proxy{Pods: func(string, string) (*corev1.Pod, error) { return pod, nil }, Connections: &ConnectionLimit{What: "requests", PerSandbox: 1}}
	refused := recordingResponder{err: make(chan error, 1)}
	serve := func(r rest.Responder) {
		handler, err := p.Connect(context.Background(), testSandbox(), "http", "/", r)
		if err != nil {
			t.Errorf("Connect: %v", err)
			return
		}
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	done := make(chan struct{})
	go func() { serve(failingResponder{t}); close(done) }()
	<-arrived
	serve(refused)
	err := <-refused.err
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != http.StatusTooManyRequests || status.Status().Details.RetryAfterSeconds == 0 {
		t.Fatalf("a second connection = %v; want a 429 with Retry-After", err)
	}
	close(release)
	<-done
	serve(failingResponder{t})
	if len(arrived) != 1 {
		t.Errorf("%d requests waiting at the sandbox after the first ended, want the one let through", len(arrived))
	}
}

// podServing serves handler at a non-loopback address of this machine (the proxy never dials
// loopback) and returns a ready pod with that address, declaring the port as "http". Without
// such an address the test is skipped.
func podServing(t *testing.T, handler http.Handler) *corev1.Pod {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var ip net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			ip = n.IP
			break
		}
	}
	if ip == nil {
		t.Skip("this machine has no non-loopback IPv4 address to serve the pod at")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	backend := httptest.NewUnstartedServer(handler)
	backend.Listener = l
	backend.Start()
	t.Cleanup(backend.Close)
	pod := readyPod()
	pod.Status.PodIP = ip.String()
	pod.Spec.Containers[1].Ports[1].ContainerPort = int32(l.Addr().(*net.TCPAddr).Port)
	return pod
}
