// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testRunner(t *testing.T) Runner {
	t.Helper()
	root := t.TempDir()
	cfg := Config{Root: root, Out: filepath.Join(root, "_output/local"), StartTimeout: 10 * time.Second, StopTimeout: 2 * time.Second}
	return Runner{Config: cfg, Log: func(format string, args ...any) { t.Logf(format, args...) }}
}

// A component is started in the background, found running, said ready once its probe passes,
// left alone by a second start and stopped.
func TestStartStop(t *testing.T) {
	r := testRunner(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	sleep, _ = filepath.EvalSymlinks(sleep)
	c := Component{Name: "idler", Binary: sleep, Args: []string{"60"},
		Ready: Probe{Exec: []string{"true"}}, Dirs: []string{filepath.Join(r.Config.Data(), "idler")}}
	if err := r.Start(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	pid, ok := r.Running(c)
	if !ok {
		t.Fatal("not running after start")
	}
	if info, err := os.Stat(c.Dirs[0]); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v, %v; want mode 0700", info, err)
	}
	// The directories above are open: containers in a user namespace reach their root filesystems
	// below them as a user other than root.
	for _, d := range []string{r.Config.Out, r.Config.Data()} {
		if info, err := os.Stat(d); err != nil || info.Mode().Perm()&0o005 != 0o005 {
			t.Errorf("%s: %v, %v; want others to read and search it", d, info, err)
		}
	}
	if err := r.Start(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Running(c); again != pid {
		t.Errorf("a second start replaced PID %d with %d", pid, again)
	}
	if state, ok := r.Status(c); !ok || !strings.HasPrefix(state, "running") {
		t.Errorf("status %q, %v", state, ok)
	}
	r.Stop(c)
	if alive(pid) {
		t.Errorf("PID %d alive after stop", pid)
	}
	if state, ok := r.Status(c); ok || state != "stopped" {
		t.Errorf("status after stop %q, %v; want stopped", state, ok)
	}
}

// A component that exits during its start fails it with the end of its log.
func TestStartFailsWhenItExits(t *testing.T) {
	r := testRunner(t)
	c := Component{Name: "crasher", Binary: "/bin/sh", Args: []string{"-c", "echo bad flag >&2; exit 3"},
		Ready: Probe{LogLine: "never"}}
	err := r.Start(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") {
		t.Fatalf("start: %v; want exited during start-up", err)
	}
	log, _ := os.ReadFile(r.Config.Log("crasher"))
	if !strings.Contains(string(log), "bad flag") || !strings.Contains(string(log), "==== ") {
		t.Errorf("log %q lacks the start marker or the output", log)
	}
	if _, err := os.Stat(r.Config.Pidfile("crasher")); err == nil {
		t.Error("PID file left after a failed start")
	}
}

// A port held by another process stops the start before anything is launched, naming the port.
func TestStartRefusesABusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	r := testRunner(t)
	c := Component{Name: "web", Binary: "/bin/sh", Args: []string{"-c", "sleep 60"}, Ports: []int{port}}
	err = r.Start(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "port") {
		t.Fatalf("start: %v; want the busy port named", err)
	}
	if _, err := os.Stat(r.Config.Pidfile("web")); err == nil {
		t.Error("launched despite the busy port")
	}
}

// A PID file naming a process of another program is not taken for the component.
func TestRecycledPID(t *testing.T) {
	r := testRunner(t)
	c := Component{Name: "etcd", Binary: "/nonexistent/etcd"}
	os.MkdirAll(r.Config.Pids(), 0o700)
	os.WriteFile(r.Config.Pidfile("etcd"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	if _, ok := r.Running(c); ok {
		t.Error("the test binary's PID was taken for etcd")
	}
	r.Stop(c) // must not kill this process
	if _, err := os.Stat(r.Config.Pidfile("etcd")); err == nil {
		t.Error("stale PID file kept")
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("ETCD_PORT", "12379")
	t.Setenv("SANDBOX_APISERVER_ARGS", "--e2b-port=3000  --v=2")
	cfg, err := ConfigFromEnv("/repo")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EtcdPort != 12379 || cfg.KubeAPIServerPort != 6443 || cfg.NodeIP() != "10.88.0.1" {
		t.Errorf("config %+v", cfg)
	}
	srv, err := cfg.Component("sandbox-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Args[len(srv.Args)-2:]; !slices.Equal(got, []string{"--e2b-port=3000", "--v=2"}) {
		t.Errorf("extra server flags %q", got)
	}
	t.Setenv("KUBE_APISERVER_PORT", "http")
	t.Setenv("NODE_POD_CIDR", "10.88.0.0/31")
	_, err = ConfigFromEnv("/repo")
	if err == nil || !strings.Contains(err.Error(), "KUBE_APISERVER_PORT") || !strings.Contains(err.Error(), "NODE_POD_CIDR") {
		t.Errorf("bad knobs: %v; want both named", err)
	}
}

// The node's files carry the configuration's addresses and paths; the CNI one is valid JSON.
func TestWriteNodeConfig(t *testing.T) {
	t.Setenv("NODE_POD_CIDR", "10.99.0.0/24")
	t.Setenv("NODE_BRIDGE", "br-test")
	cfg, err := ConfigFromEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.WriteNodeConfig(); err != nil {
		t.Fatal(err)
	}
	var cni struct {
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
			IPAM   struct {
				Ranges [][]struct{ Subnet, Gateway string } `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	b, _ := os.ReadFile(filepath.Join(cfg.NodeDir(), "cni/net.d/10-sandbox-local.conflist"))
	if err := json.Unmarshal(b, &cni); err != nil {
		t.Fatalf("CNI configuration: %v\n%s", err, b)
	}
	if p := cni.Plugins[0]; p.Bridge != "br-test" || p.IPAM.Ranges[0][0].Subnet != "10.99.0.0/24" || p.IPAM.Ranges[0][0].Gateway != "10.99.0.1" {
		t.Errorf("bridge plugin %+v", p)
	}
	kubelet, _ := os.ReadFile(filepath.Join(cfg.NodeDir(), "kubelet-config.yaml"))
	for _, want := range []string{"address: 10.99.0.1\n", "containerRuntimeEndpoint: unix://" + cfg.ContainerdSock() + "\n"} {
		if !strings.Contains(string(kubelet), want) {
			t.Errorf("kubelet configuration lacks %q", want)
		}
	}
}

// The credentials are private, the directories above them open, every kubeconfig 0600.
func TestWriteCredentialsModes(t *testing.T) {
	cfg, err := ConfigFromEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.WriteCredentials(false, func(string) {}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		cfg.Out: 0o755, cfg.Certs(): 0o700, cfg.Kubeconfigs(): 0o700,
		cfg.AdminKubeconfig(): 0o600, cfg.Kubeconfig("kwok"): 0o600, cfg.Cert("ca.key"): 0o600,
	} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %v", path, info, err, want)
		}
	}
}
