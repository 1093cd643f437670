// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxstream

import (
	"bufio"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	restclient "k8s.io/client-go/rest"
)

type failingResponder struct{ t *testing.T }

func (r failingResponder) Object(int, runtime.Object) {}
func (r failingResponder) Error(err error)            { r.t.Errorf("the forward failed: %v", err) }

// TestForwardUpgrade: an upgraded stream reaches the pod's subresource on kube-apiserver with the
// server's credentials, the query of the parsed options and the protocol headers only, and the
// bytes then flow both ways.
func TestForwardUpgrade(t *testing.T) {
	seen := make(chan *http.Request, 1)
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		seen <- req
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString("echo " + line)
		_ = rw.Flush()
	}))
	defer backend.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw})
	kube, err := newKubeAPI(&restclient.Config{Host: backend.URL, BearerToken: "server-token", TLSClientConfig: restclient.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb"}}
	location, err := kube.location(pod, "exec", &corev1.PodExecOptions{Command: []string{"true"}, Stdout: true, Container: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(kube.forward(location, failingResponder{t}))
	defer front.Close()

	conn, err := net.DialTimeout("tcp", front.Listener.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	_, _ = io.WriteString(conn, "POST /apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/sb/exec?command=rm&container=other HTTP/1.1\r\n"+
		"Host: sandbox-apiserver\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"+
		"X-Remote-User: alice\r\nX-Remote-Group: system:masters\r\nAuthorization: Bearer tenant-token\r\nImpersonate-User: admin\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the upgrade: %v, %v; want 101", resp, err)
	}
	_, _ = io.WriteString(conn, "ping\n")
	if back, _ := r.ReadString('\n'); back != "echo ping\n" {
		t.Errorf("through the stream: %q; want the backend's echo", back)
	}

	req := <-seen
	if req.URL.Path != "/api/v1/namespaces/ns/pods/sb/exec" {
		t.Errorf("forwarded to %s; want the pod's exec", req.URL.Path)
	}
	if q := req.URL.Query(); strings.Join(q["command"], " ") != "true" || q.Get("container") != "agent" || q.Get("stdout") != "true" {
		t.Errorf("forwarded query %v; want the parsed options, not the request's", q)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer server-token" {
		t.Errorf("Authorization %q; want the server's own", got)
	}
	for _, h := range []string{"X-Remote-User", "X-Remote-Group", "Impersonate-User"} {
		if v := req.Header.Get(h); v != "" {
			t.Errorf("%s %q forwarded", h, v)
		}
	}
	if req.Header.Get("X-Stream-Protocol-Version") != "v4.channel.k8s.io" || req.Header.Get("Upgrade") != "SPDY/3.1" {
		t.Errorf("protocol headers not forwarded: %v", req.Header)
	}
	if req.Host != strings.TrimPrefix(backend.URL, "https://") {
		t.Errorf("Host %q; want kube-apiserver's", req.Host)
	}
}

// TestStatusChecker: a log request kube-apiserver refuses gives the caller kube-apiserver's own
// status (code, reason and message); a body that is no Status keeps the code.
func TestStatusChecker(t *testing.T) {
	respond := func(code int, body string) *http.Response {
		return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader(body))}
	}
	if err := (statusChecker{}).Check(respond(200, "log line")); err != nil {
		t.Errorf("a 200: %v", err)
	}
	err := (statusChecker{}).Check(respond(400, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"container \"agent\" in pod \"sb\" is waiting to start","reason":"BadRequest","code":400}`))
	if !apierrors.IsBadRequest(err) || err.Error() != `container "agent" in pod "sb" is waiting to start` {
		t.Errorf("a Status 400: %v; want it as it came", err)
	}
	err = (statusChecker{}).Check(respond(502, "bad gateway"))
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != 502 || !strings.Contains(err.Error(), "bad gateway") {
		t.Errorf("a plain 502: %v", err)
	}
}
