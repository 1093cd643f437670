// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// deployObjects are the objects of artifacts/deploy/, as `kubectl apply` names them.
var deployObjects = []string{
	"namespace/sandbox-system",
	"serviceaccount/sandbox-apiserver",
	"clusterrolebinding.rbac.authorization.k8s.io/sandbox-apiserver:system:auth-delegator",
	"rolebinding.rbac.authorization.k8s.io/sandbox-apiserver:extension-apiserver-authentication-reader",
	"clusterrole.rbac.authorization.k8s.io/sandbox-apiserver",
	"clusterrolebinding.rbac.authorization.k8s.io/sandbox-apiserver",
	"role.rbac.authorization.k8s.io/sandbox-apiserver:leader-election",
	"rolebinding.rbac.authorization.k8s.io/sandbox-apiserver:leader-election",
	"clusterrole.rbac.authorization.k8s.io/sandbox-apiserver:aggregate-to-edit",
	"clusterrole.rbac.authorization.k8s.io/sandbox-apiserver:aggregate-to-view",
	"clusterrole.rbac.authorization.k8s.io/sandbox-apiserver:e2b-user",
	"validatingadmissionpolicy.admissionregistration.k8s.io/sandbox-apiserver-children",
	"validatingadmissionpolicybinding.admissionregistration.k8s.io/sandbox-apiserver-children",
	"service/sandbox-etcd-peer",
	"service/sandbox-etcd",
	"statefulset.apps/sandbox-etcd",
	"poddisruptionbudget.policy/sandbox-etcd",
	"networkpolicy.networking.k8s.io/sandbox-etcd",
	"deployment.apps/sandbox-apiserver",
	"poddisruptionbudget.policy/sandbox-apiserver",
	"service/sandbox-apiserver",
	"apiservice.apiregistration.k8s.io/v1beta1.agents.x-k8s.io",
	"apiservice.apiregistration.k8s.io/v1alpha1.agents.x-k8s.io",
	"apiservice.apiregistration.k8s.io/v1beta1.extensions.agents.x-k8s.io",
	"apiservice.apiregistration.k8s.io/v1alpha1.extensions.agents.x-k8s.io",
}

// renderedSecrets are the objects hack/deploy-certs.sh adds to deployObjects.
var renderedSecrets = []string{
	"secret/sandbox-apiserver-serving-cert",
	"secret/sandbox-etcd-tls",
	"secret/sandbox-apiserver-etcd-client",
}

// dryRunLine is one line of `kubectl apply --dry-run=server`: the object and what would happen.
var dryRunLine = regexp.MustCompile(`^(\S+) (created|configured|unchanged) \(server dry run\)$`)

// TestDeployManifestsDryRun renders artifacts/deploy/ with hack/deploy-certs.sh and has the
// cluster validate every object with `kubectl apply --dry-run=server`, rendered and as the plain
// files; nothing is stored. The local control plane already has sandbox-system, the same
// ClusterRoles and the four APIServices (pointing at its ExternalName Service), so some objects
// would be configured rather than created: that is what an operator's upgrade does too. It also
// checks the certificates (the serving certificate verifies against the caBundle for the names
// the aggregator dials) and that the servers' flags in the manifests are flags the binaries
// accept.
func TestDeployManifestsDryRun(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	const image = "registry.example/sandbox-apiserver:e2e"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "hack/deploy-certs.sh"), out)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "IMAGE="+image)
	script, err := cmd.CombinedOutput()
	t.Logf("$ IMAGE=%s hack/deploy-certs.sh %s\n%s", image, out, indent(string(script)))
	if err != nil {
		t.Fatalf("hack/deploy-certs.sh: %v", err)
	}
	manifests := filepath.Join(out, "manifests")
	certs := filepath.Join(out, "certs")

	caPEM := readFile(t, filepath.Join(certs, "ca.crt"))
	servingPEM := readFile(t, filepath.Join(certs, "serving.crt"))
	verifyServingCert(t, caPEM, servingPEM, "sandbox-apiserver.sandbox-system.svc", "sandbox-apiserver.sandbox-system.svc.cluster.local")
	verifyServingCert(t, readFile(t, filepath.Join(certs, "etcd-ca.crt")), readFile(t, filepath.Join(certs, "etcd-peer.crt")),
		"sandbox-etcd-0.sandbox-etcd-peer.sandbox-system.svc", "sandbox-etcd.sandbox-system.svc")
	verifyClientCert(t, readFile(t, filepath.Join(certs, "etcd-ca.crt")), readFile(t, filepath.Join(certs, "etcd-client.crt")))

	t.Run("rendered", func(t *testing.T) {
		dryRunApply(t, manifests, append(slices.Clone(deployObjects), renderedSecrets...))
		checkRendered(t, manifests, image, caPEM, servingPEM)
	})
	t.Run("plain", func(t *testing.T) {
		// The plain files apply as they are (with the placeholders for image and caBundle).
		dryRunApply(t, filepath.Join(repoRoot, "artifacts/deploy"), deployObjects)
	})
}

// dryRunApply runs `kubectl apply --dry-run=server -f dir` and fails the test unless it
// succeeds and reports every one of want, and nothing else.
func dryRunApply(t *testing.T, dir string, want []string) {
	t.Helper()
	stdout, stderr, err := kubectlErr(t, "apply", "--dry-run=server", "-f", dir)
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server -f %s: %v\nstdout:\n%s\nstderr:\n%s", dir, err, indent(stdout), indent(stderr))
	}
	if s := strings.TrimSpace(stderr); s != "" {
		t.Logf("kubectl apply --dry-run=server -f %s: stderr:\n%s", dir, indent(s))
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		m := dryRunLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			t.Errorf("unexpected kubectl apply line %q", line)
			continue
		}
		got = append(got, m[1])
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kubectl apply --dry-run=server -f %s applied\n%s\nwant\n%s", dir, indent(strings.Join(got, "\n")), indent(strings.Join(want, "\n")))
	}
}

// dryRunObject is what checkRendered reads of the objects a dry run returns.
type dryRunObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		CABundle string `json:"caBundle"`
		Template struct {
			Spec struct {
				Containers []struct {
					Image   string   `json:"image"`
					Command []string `json:"command"`
					Args    []string `json:"args"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// checkRendered looks at the objects as the server would store them: every namespaced object in
// sandbox-system (but the RoleBinding that must be in kube-system), the caBundle and the serving
// Secret from the certificate step, the image from IMAGE, and flags the binaries accept.
func checkRendered(t *testing.T, manifests, image string, caPEM, servingPEM []byte) {
	t.Helper()
	stdout := kubectl(t, "apply", "--dry-run=server", "-f", manifests, "-o", "json")
	var list struct {
		Items []dryRunObject `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("decoding the dry-run objects: %v", err)
	}
	clusterScoped := []string{"Namespace", "ClusterRole", "ClusterRoleBinding", "APIService", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	apiServices := 0
	for _, o := range list.Items {
		name := o.Kind + "/" + o.Metadata.Name
		switch {
		case slices.Contains(clusterScoped, o.Kind):
			if o.Metadata.Namespace != "" {
				t.Errorf("%s: namespace %q on a cluster-scoped object", name, o.Metadata.Namespace)
			}
		case o.Kind == "RoleBinding" && o.Metadata.Name == "sandbox-apiserver:extension-apiserver-authentication-reader":
			if o.Metadata.Namespace != "kube-system" {
				t.Errorf("%s: namespace %q, want kube-system", name, o.Metadata.Namespace)
			}
		case o.Metadata.Namespace != "sandbox-system":
			t.Errorf("%s: namespace %q, want sandbox-system", name, o.Metadata.Namespace)
		}

		switch {
		case o.Kind == "APIService":
			apiServices++
			if got, err := base64.StdEncoding.DecodeString(o.Spec.CABundle); err != nil || !bytes.Equal(got, caPEM) {
				t.Errorf("%s: caBundle is not certs/ca.crt (decode error %v)", name, err)
			}
		case o.Kind == "Secret" && o.Metadata.Name == "sandbox-apiserver-serving-cert":
			if got, err := base64.StdEncoding.DecodeString(o.Data["tls.crt"]); err != nil || !bytes.Equal(got, servingPEM) {
				t.Errorf("%s: tls.crt is not certs/serving.crt (decode error %v)", name, err)
			}
			if o.Data["tls.key"] == "" {
				t.Errorf("%s: no tls.key", name)
			}
		case o.Kind == "Deployment" && o.Metadata.Name == "sandbox-apiserver":
			c := o.Spec.Template.Spec.Containers
			if len(c) != 1 {
				t.Fatalf("%s: %d containers, want 1", name, len(c))
			}
			if c[0].Image != image {
				t.Errorf("%s: image %q, want %q (IMAGE)", name, c[0].Image, image)
			}
			expectFlagsAccepted(t, name, filepath.Join(repoRoot, "_output/bin/sandbox-apiserver"), c[0].Args)
			// Sandbox objects are reached over TLS with the server's etcd client certificate.
			expectFlags(t, name, c[0].Args, "--etcd-servers=https://sandbox-etcd.sandbox-system.svc:2379",
				"--etcd-cafile=", "--etcd-certfile=", "--etcd-keyfile=")
			// The secure default NetworkPolicy admits the server's own pods (sandboxes/proxy).
			expectFlags(t, name, c[0].Args, "--server-pod-namespace=$(POD_NAMESPACE)", "--server-pod-labels=app.kubernetes.io/name=sandbox-apiserver")
		case o.Kind == "StatefulSet" && o.Metadata.Name == "sandbox-etcd":
			c := o.Spec.Template.Spec.Containers
			if len(c) != 1 || len(c[0].Command) < 2 || c[0].Command[0] != "etcd" {
				t.Fatalf("%s: want one container running etcd, got %+v", name, c)
			}
			if !regexp.MustCompile(`^registry\.k8s\.io/etcd:3\.6\.\d+-\d+$`).MatchString(c[0].Image) {
				t.Errorf("%s: image %q is not a registry.k8s.io/etcd 3.6 tag", name, c[0].Image)
			}
			// The etcd built for the local control plane is of the same minor as the image.
			expectFlagsAccepted(t, name, filepath.Join(repoRoot, "_output/tools/bin/etcd"), c[0].Command[1:])
			// Clients and peers need a certificate of the etcd CA; no plain-HTTP data port.
			expectFlags(t, name, c[0].Command, "--listen-client-urls=https://", "--listen-peer-urls=https://",
				"--client-cert-auth=true", "--peer-client-cert-auth=true", "--trusted-ca-file=", "--peer-trusted-ca-file=")
		}
	}
	if apiServices != 4 {
		t.Errorf("%d APIServices in the dry run, want 4", apiServices)
	}
}

// expectFlags fails the test unless, for every prefix, some argument starts with it.
func expectFlags(t *testing.T, what string, args []string, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, p) }) {
			t.Errorf("%s: no flag %s... in %q", what, p, args)
		}
	}
}

// expectFlagsAccepted runs `bin ARGS... --help`: both sandbox-apiserver (cobra) and etcd parse
// every flag before the help flag and exit non-zero on an unknown or malformed one.
func expectFlagsAccepted(t *testing.T, what, bin string, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append(slices.Clone(args), "--help")...).CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Errorf("%s: %s does not accept the flags %q: %v\n%s", what, filepath.Base(bin), args, err, indent(strings.Join(lines[:min(len(lines), 5)], "\n")))
	}
}

// verifyServingCert fails the test unless the PEM certificate leaf verifies against caPEM as a
// TLS server certificate for every name.
func verifyServingCert(t *testing.T, caPEM, leafPEM []byte, names ...string) {
	t.Helper()
	leaf, roots := parseLeaf(t, caPEM, leafPEM)
	for _, name := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("certificate %q for %s: %v", leaf.Subject.CommonName, name, err)
		}
	}
}

// verifyClientCert fails the test unless the PEM certificate leaf verifies against caPEM as a TLS
// client certificate.
func verifyClientCert(t *testing.T, caPEM, leafPEM []byte) {
	t.Helper()
	leaf, roots := parseLeaf(t, caPEM, leafPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate %q: %v", leaf.Subject.CommonName, err)
	}
}

// parseLeaf decodes a PEM certificate and a PEM CA into a certificate and a pool of roots.
func parseLeaf(t *testing.T, caPEM, leafPEM []byte) (*x509.Certificate, *x509.CertPool) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate in the CA PEM")
	}
	block, _ := pem.Decode(leafPEM)
	if block == nil {
		t.Fatal("no certificate in the leaf PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return leaf, roots
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
