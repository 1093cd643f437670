// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
)

// peerGoSDKClaim is a claim exactly as the peer's Go SDK (clients/go/sandbox) writes it: a
// generated name, the pool by warmPoolRef alone, its created-by label, its trace context and the
// time the client first asked.
func peerGoSDKClaim(pool string, requestedAt time.Time) *extensionsv1beta1.SandboxClaim {
	return &extensionsv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "sandbox-claim-",
			Labels:       map[string]string{agentsv1beta1.CreatedByLabel: "go-client"},
			Annotations: map[string]string{
				"opentelemetry.io/trace-context":          `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
				agentsv1beta1.ClientRequestedAtAnnotation: requestedAt.UTC().Format(time.RFC3339Nano),
			},
		},
		Spec: extensionsv1beta1.SandboxClaimSpec{WarmPoolRef: &extensionsv1beta1.SandboxWarmPoolRef{Name: pool}},
	}
}

// TestPeerGoSDKClaim: a tenant who may only create claims creates one as the peer's newest Go SDK
// does. It is accepted, served warm from the pool, keeps the SDK's marks, and its client-seen
// startup is measured from the SDK's stamp; a mark that carries trust is still refused.
func TestPeerGoSDKClaim(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	template := "peer-sdk-" + randSuffix(5) // the histogram's label: unique to this run
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, template, "Disallowed", "v1")+"---\n"+fmt.Sprintf(warmPool, "pool", 1, template, "Recreate"))
	waitPoolReady(t, ns, "pool", 1)
	member := jsonpath(t, ns, "{.items[0].metadata.name}", "sandboxes", "-l", extensionsv1beta1.WarmPoolSandboxLabel)

	user := "peer-sdk-" + randSuffix(5)
	grantTenant(t, ns, user)
	cfg, err := clientcmd.BuildConfigFromFlags("", newUser(t, user))
	if err != nil {
		t.Fatal(err)
	}
	tenant := versioned.NewForConfigOrDie(cfg).ExtensionsV1beta1().SandboxClaims(ns)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	before, _ := startupCounts(t, template)
	requestedAt := time.Now().Add(-50 * time.Millisecond)
	var claim *extensionsv1beta1.SandboxClaim
	eventually(t, waitTimeout, "the tenant's RBAC to reach the server", func() (bool, string) {
		claim, err = tenant.Create(ctx, peerGoSDKClaim("pool", requestedAt), metav1.CreateOptions{})
		return !apierrors.IsForbidden(err), fmt.Sprint(err)
	})
	if err != nil {
		t.Fatalf("creating the peer Go SDK's claim as a claim-only tenant: %v", err)
	}
	if !strings.HasPrefix(claim.Name, "sandbox-claim-") {
		t.Errorf("claim name %q, want one generated from sandbox-claim-", claim.Name)
	}

	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/"+claim.Name, "--timeout=60s")
	stored, err := tenant.Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.Status.SandboxStatus.Name; got != member {
		t.Errorf("claim served by sandbox %q, want the pool's warm member %q", got, member)
	}
	if !meta.IsStatusConditionTrue(stored.Status.Conditions, "Ready") {
		t.Errorf("claim conditions %v, want Ready", stored.Status.Conditions)
	}
	if got := jsonpath(t, ns, launchTypeJSONPath, "sandbox", member); got != "warm" {
		t.Errorf("sandbox launch type %q, want warm", got)
	}
	for k, v := range peerGoSDKClaim("pool", requestedAt).Labels {
		if stored.Labels[k] != v {
			t.Errorf("label %s=%q kept as %q", k, v, stored.Labels[k])
		}
	}
	for k, v := range peerGoSDKClaim("pool", requestedAt).Annotations {
		if stored.Annotations[k] != v {
			t.Errorf("annotation %s=%q kept as %q", k, v, stored.Annotations[k])
		}
	}
	// Counted from the SDK's stamp (how the stamp is read: clientrequest_test.go).
	eventually(t, waitTimeout, "agent_sandbox_client_claim_startup_latency_ms to count the claim", func() (bool, string) {
		n, server := startupCounts(t, template)
		return n > before, fmt.Sprintf("count %d, was %d; agent_sandbox_claim_startup_latency_ms counted %d", n, before, server)
	})

	// A mark the controllers trust stays theirs, whoever's SDK sends it.
	forged := peerGoSDKClaim("pool", requestedAt)
	forged.Labels[extensionsv1beta1.ClaimSandboxNameLabel] = member
	_, err = tenant.Create(ctx, forged, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.labels[agents.x-k8s.io/sandbox-name]") {
		t.Errorf("a claim with the sandbox-name label: %v, want 422 naming metadata.labels[agents.x-k8s.io/sandbox-name]", err)
	}
}

// startupCounts reads, from sandbox-apiserver's own /metrics (as the admin), how many warm claims
// of template agent_sandbox_client_claim_startup_latency_ms has counted, and how many
// agent_sandbox_claim_startup_latency_ms has.
func startupCounts(t *testing.T, template string) (client, server int) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The admin's client certificate, to the server's own port: its serving certificate is for
	// the aggregator, which skips no check here but the name.
	cfg.Host = "https://" + sandboxAPIServerURL()
	cfg.TLSClientConfig = rest.TLSClientConfig{Insecure: true, CertData: cfg.CertData, KeyData: cfg.KeyData, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	httpClient.Timeout = 30 * time.Second
	resp, err := httpClient.Get(cfg.Host + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	labels := `_count{launch_type="warm",sandbox_template="` + template + `"} `
	samples := map[string]*int{
		"agent_sandbox_client_claim_startup_latency_ms" + labels: &client,
		"agent_sandbox_claim_startup_latency_ms" + labels:        &server,
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		for prefix, n := range samples {
			if value, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				if *n, err = strconv.Atoi(value); err != nil {
					t.Fatalf("%s: %v", prefix, err)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return client, server
}
