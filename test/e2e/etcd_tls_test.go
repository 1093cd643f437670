// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// etcdAddr is the client address of one of the local plane's etcds: port from the environment
// variable env, else def.
func etcdAddr(env, def string) string {
	port := os.Getenv(env)
	if port == "" {
		port = def
	}
	return "127.0.0.1:" + port
}

// TestSandboxEtcdRequiresClientCertificate is the attack of a process (or a pod) that reaches the
// project's etcd and writes a Sandbox there for the controllers to run with their rights: the
// etcd speaks TLS only and accepts only certificates of its own CA, which signs nothing but
// sandbox-apiserver's client certificate. A certificate of the cluster's CA (the admin's) or of
// the cluster etcd's is refused as well; sandbox-apiserver's certificate reads the sandbox keys.
func TestSandboxEtcdRequiresClientCertificate(t *testing.T) {
	t.Parallel()
	expectEtcdTakesOnly(t, etcdAddr("SANDBOX_ETCD_PORT", "2381"), "sandbox-etcd-ca", "sandbox-etcd-client",
		"/registry/agents.x-k8s.io/sandboxes/default/planted", "admin", "kube-apiserver-etcd-client")
}

// TestClusterEtcdRequiresClientCertificate (issue 43 item 1) is the attack of a local user, or of
// a pod that reaches the machine's loopback, on the cluster's etcd: writing a Secret or a
// ClusterRoleBinding there makes anyone cluster-admin. The etcd speaks TLS only and accepts only
// certificates of its own CA, which signs nothing but kube-apiserver's client certificate; the
// admin's certificate (the cluster CA's) and sandbox-apiserver's etcd certificate are refused,
// and kube-apiserver's reads the keys.
func TestClusterEtcdRequiresClientCertificate(t *testing.T) {
	t.Parallel()
	expectEtcdTakesOnly(t, etcdAddr("ETCD_PORT", "2379"), "etcd-ca", "kube-apiserver-etcd-client",
		"/registry/clusterrolebindings/planted", "admin", "sandbox-etcd-client")
	// The plane works on it: kube-apiserver answers a read that goes to etcd.
	kubectl(t, "get", "namespaces", "kube-system")
}

// expectEtcdTakesOnly checks the etcd at addr: a put of key is refused over plain HTTP, over TLS
// without a certificate and with each of the others' certificates; the client certificate of
// the etcd's CA ca reads its keys.
func expectEtcdTakesOnly(t *testing.T, addr, ca, client, key string, others ...string) {
	t.Helper()
	clientWith := func(certName string) *http.Client { return tlsClient(t, ca, certName) }
	// A write of the key through etcd's JSON gateway (keys and values are base64).
	put := func(client *http.Client, scheme string) (int, string, error) {
		body, _ := json.Marshal(map[string]string{
			"key":   base64.StdEncoding.EncodeToString([]byte(key)),
			"value": base64.StdEncoding.EncodeToString([]byte(`{"kind":"planted"}`)),
		})
		resp, err := client.Post(scheme+"://"+addr+"/v3/kv/put", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	// count counts the keys from key on, with the etcd's own client's certificate.
	count := func(key string) string {
		range_, _ := json.Marshal(map[string]any{
			"key":        base64.StdEncoding.EncodeToString([]byte(key)),
			"range_end":  base64.StdEncoding.EncodeToString([]byte(key + "\x00")),
			"count_only": true,
		})
		resp, err := clientWith(client).Post("https://"+addr+"/v3/kv/range", "application/json", bytes.NewReader(range_))
		if err != nil {
			t.Fatalf("range with %s's certificate: %v", client, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("range with %s's certificate: %d %s", client, resp.StatusCode, b)
		}
		var out struct {
			Count string `json:"count"`
		}
		_ = json.Unmarshal(b, &out)
		return out.Count
	}

	cases := []struct{ name, scheme, cert string }{
		{"plain HTTP", "http", ""},
		{"TLS without a client certificate", "https", ""},
	}
	for _, other := range others {
		cases = append(cases, struct{ name, scheme, cert string }{"TLS with " + other + "'s certificate (another CA)", "https", other})
	}
	for _, tc := range cases {
		code, body, err := put(clientWith(tc.cert), tc.scheme)
		switch {
		case err != nil:
			t.Logf("%s: refused: %v", tc.name, err)
		case code == http.StatusOK:
			t.Errorf("%s: the put of %s succeeded: %s", tc.name, key, body)
		default:
			t.Logf("%s: refused with %d %s", tc.name, code, strings.TrimSpace(body))
		}
	}
	// The victim is unchanged: the key was never written (etcd's JSON leaves out a zero count).
	if n := count(key); n != "" && n != "0" {
		t.Errorf("%s holds %s keys after the refused puts", key, n)
	}
}

// tlsClient is an HTTP client that trusts the plane's CA named ca and shows the plane's
// certificate named cert ("" for none).
func tlsClient(t *testing.T, ca, cert string) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(readFile(t, filepath.Join(certsDir, ca+".crt"))) {
		t.Fatalf("no certificate in %s.crt", ca)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(filepath.Join(certsDir, cert+".crt"), filepath.Join(certsDir, cert+".key"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}
