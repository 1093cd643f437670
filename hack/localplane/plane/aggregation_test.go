// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fakeAggregator serves the APIServices as kube-apiserver does: GET and PATCH of
// /apis/apiregistration.k8s.io/v1/apiservices/NAME. They turn Available after availableAfter
// GETs of each (never when negative).
type fakeAggregator struct {
	availableAfter int
	mu             sync.Mutex
	gets, patches  map[string]int
}

func (f *fakeAggregator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/apis/apiregistration.k8s.io/v1/apiservices/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	status := "False"
	switch r.Method {
	case http.MethodPatch:
		f.patches[name]++
	case http.MethodGet:
		f.gets[name]++
		if f.availableAfter >= 0 && f.gets[name] > f.availableAfter {
			status = "True"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name, "resourceVersion": "1"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": status, "reason": "FailedDiscoveryCheck", "message": "no response"}}},
	})
}

// testPlane is a plane whose kube-apiserver is the handler and whose sandbox-apiserver is a
// sleep process.
func testPlane(t *testing.T, h http.Handler) (*Plane, *os.Process) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	root := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	sleep, _ = filepath.EvalSymlinks(sleep)
	cfg := Config{Root: root, Out: filepath.Join(root, "_output/local"), SandboxAPIServerBin: sleep,
		StartTimeout: 5 * time.Second, StopTimeout: 2 * time.Second, APIServiceTimeout: 5 * time.Second}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*kc, cfg.AdminKubeconfig()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { cmd.Process.Kill() })
	if err := writeFile(cfg.Pidfile("sandbox-apiserver"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n")); err != nil {
		t.Fatal(err)
	}
	return &Plane{Config: cfg, Log: t.Logf, interval: 10 * time.Millisecond}, cmd.Process
}

// The wait nudges every APIService (a changed annotation has kube-apiserver check it at once)
// and returns once all are Available.
func TestWaitAPIServices(t *testing.T) {
	agg := &fakeAggregator{availableAfter: 3, gets: map[string]int{}, patches: map[string]int{}}
	p, _ := testPlane(t, agg)
	if err := p.waitAPIServices(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range apiServices {
		if agg.patches[name] != 1 || agg.gets[name] < 4 {
			t.Errorf("%s: %d patches, %d gets; want 1 and at least 4", name, agg.patches[name], agg.gets[name])
		}
	}
}

// APIServices that never turn Available fail the start after APISERVICE_TIMEOUT, and
// sandbox-apiserver is stopped.
func TestWaitAPIServicesTimesOut(t *testing.T) {
	agg := &fakeAggregator{availableAfter: -1, gets: map[string]int{}, patches: map[string]int{}}
	p, proc := testPlane(t, agg)
	p.Config.APIServiceTimeout = 200 * time.Millisecond
	err := p.waitAPIServices(context.Background())
	if !errors.Is(err, ErrReported) {
		t.Fatalf("never Available: %v, want the failure reported", err)
	}
	if alive(proc.Pid) {
		t.Error("sandbox-apiserver still runs after the failed wait")
	}
	if _, err := os.Stat(p.Config.Pidfile("sandbox-apiserver")); err == nil {
		t.Error("its PID file is left")
	}
}

// A sandbox-apiserver that exits while the APIServices are awaited fails the wait at once.
func TestWaitAPIServicesServerExits(t *testing.T) {
	agg := &fakeAggregator{availableAfter: -1, gets: map[string]int{}, patches: map[string]int{}}
	p, proc := testPlane(t, agg)
	proc.Kill()
	start := time.Now()
	if err := p.waitAPIServices(context.Background()); !errors.Is(err, ErrReported) {
		t.Fatalf("server gone: %v, want the failure reported", err)
	}
	if d := time.Since(start); d >= p.Config.APIServiceTimeout {
		t.Errorf("took %s, the whole timeout", d)
	}
}
