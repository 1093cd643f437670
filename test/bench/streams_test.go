// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// StreamFigures are one path's figures: sandboxes/* through the aggregated API, or the pod's own
// pods/* on kube-apiserver.
type StreamFigures struct {
	ExecTrueP50Ms    float64 `json:"execTrueP50Ms"`
	ExecTrueP99Ms    float64 `json:"execTrueP99Ms"`
	CopyInP50Ms      float64 `json:"copyIn10MiBP50Ms"`
	CopyInP99Ms      float64 `json:"copyIn10MiBP99Ms"`
	CopyOutP50Ms     float64 `json:"copyOut10MiBP50Ms"`
	CopyOutP99Ms     float64 `json:"copyOut10MiBP99Ms"`
	ForwardMiBPerSec float64 `json:"portForward64MiBMiBPerSec"`
	ForwardGetP50Ms  float64 `json:"portForwardGetP50Ms"`
	ForwardGetP99Ms  float64 `json:"portForwardGetP99Ms"`
	ExecRuns         int     `json:"execRuns"`
	CopyRuns         int     `json:"copyRuns"`
	ForwardGets      int     `json:"portForwardGets"`
}

// StreamsResult is the content of _output/bench/streams.json.
type StreamsResult struct {
	Machine   Machine       `json:"machine"`
	Sandboxes StreamFigures `json:"sandboxes"`
	Pods      StreamFigures `json:"pods"`
	LoadAvg   string        `json:"loadAverageAtStart"`
	Note      string        `json:"note"`
}

const (
	streamExecRuns    = 50
	streamCopyRuns    = 5
	streamCopyBytes   = 10 << 20
	streamForwardSize = 64 << 20
	streamForwardGets = 100
)

// BenchmarkStreams measures sandboxes/exec and sandboxes/portforward against pods/exec and
// pods/portforward on the same pod, on the local plane (kwok runs the commands on this machine
// and forwards the pod's port to its Nodes' address): exec of true, a 10 MiB copy in and out (tar over
// exec, WebSocket as kubectl uses first), and a 64 MiB download and small GETs over a
// port-forward (SPDY).
func BenchmarkStreams(b *testing.B) {
	c := connect(b)
	ns := c.namespace(b, "streams")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	sb := &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "streamed"},
		Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: onKwok(corev1.PodSpec{
			Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}},
		})}},
	}
	if _, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).Get(ctx, sb.Name, metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, "Ready"), nil
	})
	if err != nil {
		b.Fatalf("sandbox not Ready: %v", err)
	}
	port, stopServer := serveDownload(b, c.kwokAddress(b))
	defer stopServer()
	dir := "bench-" + ns
	res := StreamsResult{Machine: machine(), LoadAvg: loadAverage(),
		Note: "one machine runs kube-apiserver, etcd, kwok (which runs the commands), sandbox-apiserver and the clients; " +
			"sandboxes/* goes client -> kube-apiserver -> sandbox-apiserver -> kube-apiserver pods/* -> kwok, pods/* skips the middle two hops"}
	for _, p := range []struct {
		out  *StreamFigures
		base string
	}{
		{&res.Sandboxes, "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/" + sb.Name},
		{&res.Pods, "/api/v1/namespaces/" + ns + "/pods/" + sb.Name},
	} {
		*p.out = measureStreams(ctx, b, c.config, p.base, dir, port)
	}
	_, _ = benchExec(ctx, c.config, c.config.Host+"/api/v1/namespaces/"+ns+"/pods/"+sb.Name+"/exec", nil, "rm", "-rf", dir)

	fmt.Printf("\nstreams on %s (%d CPUs), load %s\n", res.Machine.CPUModel, res.Machine.NumCPU, res.LoadAvg)
	fmt.Printf("%-22s %12s %12s\n", "", "sandboxes/*", "pods/*")
	for _, row := range []struct {
		name string
		s, p float64
	}{
		{"exec true p50 ms", res.Sandboxes.ExecTrueP50Ms, res.Pods.ExecTrueP50Ms},
		{"exec true p99 ms", res.Sandboxes.ExecTrueP99Ms, res.Pods.ExecTrueP99Ms},
		{"copy in 10MiB p50 ms", res.Sandboxes.CopyInP50Ms, res.Pods.CopyInP50Ms},
		{"copy in 10MiB p99 ms", res.Sandboxes.CopyInP99Ms, res.Pods.CopyInP99Ms},
		{"copy out 10MiB p50 ms", res.Sandboxes.CopyOutP50Ms, res.Pods.CopyOutP50Ms},
		{"copy out 10MiB p99 ms", res.Sandboxes.CopyOutP99Ms, res.Pods.CopyOutP99Ms},
		{"forward 64MiB MiB/s", res.Sandboxes.ForwardMiBPerSec, res.Pods.ForwardMiBPerSec},
		{"forward GET p50 ms", res.Sandboxes.ForwardGetP50Ms, res.Pods.ForwardGetP50Ms},
		{"forward GET p99 ms", res.Sandboxes.ForwardGetP99Ms, res.Pods.ForwardGetP99Ms},
	} {
		fmt.Printf("%-22s %12.2f %12.2f\n", row.name, row.s, row.p)
	}
	if err := writeJSON(c.outFile("streams.json"), res); err != nil {
		b.Fatal(err)
	}
}

// measureStreams takes the figures of the path under base (an object whose exec and portforward
// subresources reach the pod).
func measureStreams(ctx context.Context, b *testing.B, cfg *restclient.Config, base, dir string, port int) StreamFigures {
	out := StreamFigures{ExecRuns: streamExecRuns, CopyRuns: streamCopyRuns, ForwardGets: streamForwardGets}
	execURL := cfg.Host + base + "/exec"
	run := func(stdin []byte, command ...string) (time.Duration, []byte) {
		start := time.Now()
		stdout, err := benchExec(ctx, cfg, execURL, stdin, command...)
		if err != nil {
			b.Fatalf("exec %v through %s: %v", command, base, err)
		}
		return time.Since(start), stdout
	}
	var execs []time.Duration
	for range streamExecRuns {
		d, _ := run(nil, "true")
		execs = append(execs, d)
	}
	out.ExecTrueP50Ms, out.ExecTrueP99Ms = p50p99(execs)

	data := make([]byte, streamCopyBytes)
	_, _ = rand.Read(data)
	archive := tarArchive(b, "data.bin", data)
	var ins, outs []time.Duration
	for range streamCopyRuns {
		d, _ := run(archive, "sh", "-c", "mkdir -p "+dir+" && tar -xmf - -C "+dir)
		ins = append(ins, d)
		d, got := run(nil, "tar", "-cf", "-", "-C", dir, "data.bin")
		outs = append(outs, d)
		r := tar.NewReader(bytes.NewReader(got))
		if _, err := r.Next(); err != nil {
			b.Fatalf("copy out through %s: %v", base, err)
		}
		if back, _ := io.ReadAll(r); !bytes.Equal(back, data) {
			b.Fatalf("the copy out through %s differs from the file copied in", base)
		}
	}
	out.CopyInP50Ms, out.CopyInP99Ms = p50p99(ins)
	out.CopyOutP50Ms, out.CopyOutP99Ms = p50p99(outs)

	local, stop := benchForward(b, cfg, cfg.Host+base+"/portforward", port)
	defer stop()
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{}}
	get := func(path string) (time.Duration, int64) {
		start := time.Now()
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", local, path))
		if err != nil {
			b.Fatalf("GET %s through the forward of %s: %v", path, base, err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return time.Since(start), n
	}
	d, n := get("/download")
	if n != streamForwardSize {
		b.Fatalf("the download through %s gave %d bytes; want %d", base, n, streamForwardSize)
	}
	out.ForwardMiBPerSec = float64(n) / (1 << 20) / d.Seconds()
	var gets []time.Duration
	for range streamForwardGets {
		d, _ := get("/small")
		gets = append(gets, d)
	}
	out.ForwardGetP50Ms, out.ForwardGetP99Ms = p50p99(gets)
	return out
}

func p50p99(d []time.Duration) (float64, float64) {
	slices.Sort(d)
	return ms(percentile(d, 50)), ms(percentile(d, 99))
}

// benchExec runs command through the exec subresource at rawURL over WebSocket and returns its
// stdout.
func benchExec(ctx context.Context, cfg *restclient.Config, rawURL string, stdin []byte, command ...string) ([]byte, error) {
	opts := &corev1.PodExecOptions{Command: command, Stdin: stdin != nil, Stdout: true, Stderr: true}
	u, err := withQuery(rawURL, opts)
	if err != nil {
		return nil, err
	}
	executor, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	streams := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
	if stdin != nil {
		streams.Stdin = bytes.NewReader(stdin)
	}
	if err := executor.StreamWithContext(ctx, streams); err != nil {
		return nil, fmt.Errorf("%w (stderr %q)", err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func withQuery(rawURL string, opts runtime.Object) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	q, err := clientgoscheme.ParameterCodec.EncodeParameters(opts, corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	u.RawQuery = q.Encode()
	return u, nil
}

// tarArchive is a tar of one file padded to whole 10 KiB records: kwok never closes stdin, so
// tar must find the end of the archive in what it has read.
func tarArchive(b *testing.B, name string, data []byte) []byte {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Now()}); err != nil {
		b.Fatal(err)
	}
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	buf.Write(make([]byte, (10240-buf.Len()%10240)%10240))
	return buf.Bytes()
}

// serveDownload serves /download (64 MiB) and /small at addr (kwok's Nodes') on a free port of
// the plane's PORT_FORWARD_PORTS, where kwok forwards the pod's port of the same number.
func serveDownload(b *testing.B, addr string) (int, func()) {
	r := os.Getenv("PORT_FORWARD_PORTS")
	if r == "" {
		r = "18000-18099"
	}
	first, last, _ := strings.Cut(r, "-")
	lo, _ := strconv.Atoi(first)
	hi, _ := strconv.Atoi(last)
	chunk := make([]byte, 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/download", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(streamForwardSize))
		for range streamForwardSize / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	for p := lo; p <= hi; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		return p, func() { _ = srv.Close() }
	}
	b.Fatalf("no free port in PORT_FORWARD_PORTS %s", r)
	return 0, nil
}

// benchForward forwards a local port to remote through the portforward subresource at rawURL
// over SPDY.
func benchForward(b *testing.B, cfg *restclient.Config, rawURL string, remote int) (int, func()) {
	u, err := url.Parse(rawURL)
	if err != nil {
		b.Fatal(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", remote)}, stop, ready, io.Discard, &errOut)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		b.Fatalf("port-forward through %s ended: %v (%s)", rawURL, err, errOut.String())
	case <-time.After(time.Minute):
		b.Fatalf("port-forward through %s not ready", rawURL)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		b.Fatalf("forwarded ports: %v, %v", ports, err)
	}
	return int(ports[0].Local), func() {
		close(stop)
		<-done
	}
}
