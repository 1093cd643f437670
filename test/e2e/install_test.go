// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The chart under test and the helm hack/build-tools.sh builds.
var (
	chartDir = "artifacts/charts/sandbox-apiserver"
	helmRel  = "_output/tools/bin/helm"
)

// installNamespace is where the chart is rendered for the local control plane: it exists there,
// and the serving certificate names sandbox-apiserver.sandbox-system.svc.
const installNamespace = "sandbox-system"

// renderedObject is one object of the chart's output, as much of it as the tests read.
type renderedObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		Replicas *int   `json:"replicas"`
		CABundle string `json:"caBundle"`
		Group    string `json:"group"`
		Version  string `json:"version"`
		Template struct {
			Spec struct {
				Containers []struct {
					Command []string `json:"command"`
					Args    []string `json:"args"`
					Env     []struct {
						Name      string `json:"name"`
						ValueFrom *struct {
							FieldRef *struct {
								FieldPath string `json:"fieldPath"`
							} `json:"fieldRef"`
						} `json:"valueFrom"`
					} `json:"env"`
					VolumeMounts []struct {
						Name      string `json:"name"`
						MountPath string `json:"mountPath"`
					} `json:"volumeMounts"`
				} `json:"containers"`
				Volumes []struct {
					Name   string `json:"name"`
					Secret *struct {
						SecretName string `json:"secretName"`
					} `json:"secret"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// rendered is the chart's output for one set of values.
type rendered struct {
	yaml    string
	objects []renderedObject
}

// find returns the object of kind and name, failing the test when there is none.
func (r rendered) find(t *testing.T, kind, name string) renderedObject {
	t.Helper()
	for _, o := range r.objects {
		if o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the rendered chart", kind, name)
	return renderedObject{}
}

// all returns every object of kind.
func (r rendered) all(kind string) []renderedObject {
	var out []renderedObject
	for _, o := range r.objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// helmRun runs the project's helm with args; env adds to the environment.
func helmRun(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	helm := filepath.Join(repoRoot, helmRel)
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s missing: run make tools", helmRel)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir()), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// renderChart runs `helm template` of the chart into ns with the extra args and parses the objects.
func renderChart(t *testing.T, ns string, args ...string) rendered {
	t.Helper()
	full := append([]string{"template", "sandbox-apiserver", chartDir, "--namespace", ns}, args...)
	stdout, stderr, err := helmRun(t, nil, full...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(full, " "), err, indent(stderr))
	}
	r := rendered{yaml: stdout}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(stdout, -1) {
		var o renderedObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("decoding a rendered object: %v\n%s", err, indent(doc))
		}
		if o.Kind != "" {
			r.objects = append(r.objects, o)
		}
	}
	return r
}

// chartMode is one way of installing: an etcd mode and a certificate mode, as helm flags.
type chartMode struct {
	name string
	args []string
}

var (
	etcdModes = []chartMode{
		{"etcd-bundled-1", []string{"--set", "etcd.bundled.replicas=1"}},
		{"etcd-bundled-3", []string{"--set", "etcd.bundled.replicas=3"}},
		{"etcd-external", []string{"--set", "etcd.mode=external", "--set", "etcd.external.endpoints={https://etcd-0.example:2379,https://etcd-1.example:2379}",
			"--set", "etcd.external.secretName=sandbox-external-etcd-client"}},
	}
	certModes = []chartMode{
		{"certs-generated", nil},
		{"certs-cert-manager", []string{"--set", "certificates.mode=certManager"}},
		// Any CA will do for a dry run: the plane's.
		{"certs-supplied", nil},
	}
)

// TestChartLint runs `helm lint --strict` on the chart with its defaults and in each mode.
func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		nil,
		{"-f", "hack/deploy-values.yaml"},
		{"--set", "certificates.mode=certManager", "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true"},
		etcdModes[2].args,
	} {
		full := append([]string{"lint", "--strict", "--namespace", installNamespace, chartDir}, args...)
		stdout, stderr, err := helmRun(t, nil, full...)
		if err != nil {
			t.Errorf("helm %s: %v\n%s%s", strings.Join(full, " "), err, indent(stdout), indent(stderr))
		}
	}
}

// TestChartSchemaRejectsTypos: a misspelt or out-of-range value fails `helm template` (and so
// `helm install`) with the schema's message naming it, instead of being ignored.
func TestChartSchemaRejectsTypos(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ set, want string }{
		{"replica=3", "replica"},
		{"etcd.bundeld.replicas=1", "bundeld"},
		{"etcd.bundled.replicas=2", "/etcd/bundled/replicas"},
		{"certificates.mode=certmanager", "/certificates/mode"},
		{"memoryLimit=lots", "memoryLimit"},
		{"image.pullpolicy=Always", "pullpolicy"},
	} {
		_, stderr, err := helmRun(t, nil, "template", "sandbox-apiserver", chartDir, "--namespace", installNamespace, "--set", tc.set)
		if err == nil {
			t.Errorf("helm template --set %s: succeeded, want a schema error", tc.set)
			continue
		}
		if !strings.Contains(stderr, "schema") || !strings.Contains(stderr, tc.want) {
			t.Errorf("helm template --set %s: error does not name %q as a schema error:\n%s", tc.set, tc.want, indent(stderr))
		}
	}
	// A mode's required values are checked too.
	_, stderr, err := helmRun(t, nil, "template", "sandbox-apiserver", chartDir, "--namespace", installNamespace, "--set", "etcd.mode=external")
	if err == nil || !strings.Contains(stderr, "endpoints") {
		t.Errorf("helm template --set etcd.mode=external without endpoints: err %v, want one naming endpoints:\n%s", err, indent(stderr))
	}
}

// standInCRDs are minimal CustomResourceDefinitions of the kinds the chart renders for
// cert-manager and the Prometheus operator, so that the cluster takes those objects in a dry
// run. They check the kind and group, not the fields (the real CRDs' schemas are not here).
const standInCRDs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: issuers.cert-manager.io
spec:
  group: cert-manager.io
  names: {kind: Issuer, plural: issuers, singular: issuer, listKind: IssuerList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.cert-manager.io
spec:
  group: cert-manager.io
  names: {kind: Certificate, plural: certificates, singular: certificate, listKind: CertificateList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, plural: servicemonitors, singular: servicemonitor, listKind: ServiceMonitorList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: PrometheusRule, plural: prometheusrules, singular: prometheusrule, listKind: PrometheusRuleList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// TestChartModesDryRun renders the chart with each etcd mode (bundled with 1 or 3 members,
// external) and each certificate mode (generated, cert-manager, supplied), with the
// ServiceMonitor and PrometheusRule on, and has the cluster validate every object with
// `kubectl apply --dry-run=server`; nothing is stored. cert-manager's and the Prometheus
// operator's kinds are taken by stand-in CRDs applied for the test.
func TestChartModesDryRun(t *testing.T) {
	t.Parallel()
	applyStandInCRDs(t)
	caBundle := base64.StdEncoding.EncodeToString(readFile(t, filepath.Join(certsDir, "ca.crt")))
	for _, etcd := range etcdModes {
		for _, certs := range certModes {
			t.Run(etcd.name+"/"+certs.name, func(t *testing.T) {
				t.Parallel()
				args := append(slices.Clone(etcd.args), certs.args...)
				if certs.name == "certs-supplied" {
					args = append(args, "--set", "certificates.mode=supplied", "--set", "certificates.supplied.caBundle="+caBundle)
				}
				args = append(args, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true")
				r := renderChart(t, installNamespace, args...)
				checkModeObjects(t, r, etcd.name, certs.name)

				cmd := kubectlCmd(t, "apply", "--dry-run=server", "-f", "-")
				cmd.Stdin = strings.NewReader(r.yaml)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Run(); err != nil {
					t.Fatalf("kubectl apply --dry-run=server: %v\n%s%s", err, indent(out.String()), indent(errOut.String()))
				}
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				for _, line := range lines {
					if !dryRunLine.MatchString(strings.TrimSpace(line)) {
						t.Errorf("unexpected kubectl apply line %q", line)
					}
				}
				if len(lines) != len(r.objects) {
					t.Errorf("kubectl applied %d objects, the chart rendered %d:\n%s", len(lines), len(r.objects), indent(out.String()))
				}
			})
		}
	}
}

// checkModeObjects checks what a mode renders beyond what the cluster validates: the etcd
// members, the certificates' sources and the caBundle.
func checkModeObjects(t *testing.T, r rendered, etcdMode, certMode string) {
	t.Helper()
	sets := r.all("StatefulSet")
	switch etcdMode {
	case "etcd-external":
		if len(sets) != 0 {
			t.Errorf("external etcd: a StatefulSet is rendered")
		}
		args := r.find(t, "Deployment", "sandbox-apiserver").Spec.Template.Spec.Containers[0].Args
		expectFlags(t, "Deployment", args, "--etcd-servers=https://etcd-0.example:2379,https://etcd-1.example:2379")
		if got := secretVolume(t, r.find(t, "Deployment", "sandbox-apiserver"), "etcd-client"); got != "sandbox-external-etcd-client" {
			t.Errorf("external etcd: client certificate from Secret %q, want sandbox-external-etcd-client", got)
		}
	default:
		want := map[string]int{"etcd-bundled-1": 1, "etcd-bundled-3": 3}[etcdMode]
		if len(sets) != 1 || sets[0].Spec.Replicas == nil || *sets[0].Spec.Replicas != want {
			t.Fatalf("%s: want one etcd StatefulSet of %d members, got %+v", etcdMode, want, sets)
		}
		cmd := sets[0].Spec.Template.Spec.Containers[0].Command
		expectFlags(t, "StatefulSet", cmd, "--client-cert-auth=true", "--peer-client-cert-auth=true", "--listen-client-urls=https://")
		for _, a := range cmd {
			if m, ok := strings.CutPrefix(a, "--initial-cluster="); ok && strings.Count(m, "=https://") != want {
				t.Errorf("%s: --initial-cluster=%s, want %d members", etcdMode, m, want)
			}
		}
	}
	apiServices := r.all("APIService")
	if len(apiServices) != 4 {
		t.Fatalf("%d APIServices rendered, want 4", len(apiServices))
	}
	for _, a := range apiServices {
		injected := a.Metadata.Annotations["cert-manager.io/inject-ca-from"]
		switch certMode {
		case "certs-cert-manager":
			if injected != installNamespace+"/sandbox-apiserver-serving-cert" || a.Spec.CABundle != "" {
				t.Errorf("%s: inject-ca-from %q and caBundle %q, want the Certificate's injection and no caBundle", a.Metadata.Name, injected, a.Spec.CABundle)
			}
		case "certs-generated":
			if a.Spec.CABundle == "" || a.Spec.CABundle != r.find(t, "Secret", "sandbox-apiserver-serving-cert").Data["ca.crt"] {
				t.Errorf("%s: caBundle is not the generated Secret's ca.crt", a.Metadata.Name)
			}
		}
	}
	if certMode == "certs-cert-manager" {
		if n := len(r.all("Certificate")); etcdMode == "etcd-external" && n != 2 || etcdMode != "etcd-external" && n != 5 {
			t.Errorf("%s with %s: %d Certificates", certMode, etcdMode, n)
		}
	}
}

// secretVolume is the Secret behind the Deployment's volume name.
func secretVolume(t *testing.T, d renderedObject, name string) string {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	t.Fatalf("no Secret volume %s", name)
	return ""
}

// applyStandInCRDs creates standInCRDs (deleted after the test) and waits until they serve.
func applyStandInCRDs(t *testing.T) {
	t.Helper()
	cmd := kubectlCmd(t, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(standInCRDs)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("applying the stand-in CRDs: %v\n%s", err, indent(string(out)))
	}
	names := []string{"issuers.cert-manager.io", "certificates.cert-manager.io", "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"}
	t.Cleanup(func() {
		args := []string{"delete", "--ignore-not-found", "--wait=false"}
		for _, n := range names {
			args = append(args, "crd/"+n)
		}
		_, _, _ = kubectlErr(t, args...)
	})
	args := []string{"wait", "--for=condition=Established", "--timeout=60s"}
	for _, n := range names {
		args = append(args, "crd/"+n)
	}
	kubectl(t, args...)
}

// kubectlCmd is kubectl as the admin of the local control plane, for a command with stdin.
func kubectlCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(kubectlBin, append([]string{"--kubeconfig", adminKubeconfig, "--request-timeout=60s"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+kubeCacheDir)
	return cmd
}

// TestChartUpgradeKeepsCertificates: an upgrade renders the chart with the first release's
// Secrets in the cluster; the chart must then keep the certificates (and so the APIServices'
// caBundle) rather than make new ones. The first release's Secrets are stored in a scratch
// namespace, and `helm template --dry-run=server` renders there as `helm upgrade` would.
func TestChartUpgradeKeepsCertificates(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	first := renderChart(t, ns)
	secrets := []string{"sandbox-apiserver-serving-cert", "sandbox-etcd-tls", "sandbox-apiserver-etcd-client"}

	// Without a cluster every render makes new certificates.
	if again := renderChart(t, ns); again.find(t, "Secret", secrets[0]).Data["ca.crt"] == first.find(t, "Secret", secrets[0]).Data["ca.crt"] {
		t.Fatal("two renders without a cluster made the same CA: the test could not tell kept certificates from new ones")
	}

	var stored []string
	for _, name := range secrets {
		b, err := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": map[bool]string{true: "kubernetes.io/tls", false: "Opaque"}[name == secrets[0]],
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": first.find(t, "Secret", name).Data,
		})
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, string(b))
	}
	cmd := kubectlCmd(t, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(stored, "\n"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("storing the first release's Secrets: %v\n%s", err, indent(string(out)))
	}

	upgrade := renderChart(t, ns, "--dry-run=server", "--kubeconfig", adminKubeconfig)
	for _, name := range secrets {
		if got, want := upgrade.find(t, "Secret", name).Data, first.find(t, "Secret", name).Data; !mapsEqual(got, want) {
			t.Errorf("Secret %s: the upgrade renders other certificates than the first release's", name)
		}
	}
	wantCA := first.find(t, "Secret", secrets[0]).Data["ca.crt"]
	for _, a := range upgrade.all("APIService") {
		if a.Spec.CABundle != wantCA {
			t.Errorf("APIService %s: the upgrade changes the caBundle", a.Metadata.Name)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestChartServes starts etcd and sandbox-apiserver as the chart's default install (generated
// certificates, bundled etcd) runs them: each with the arguments of its rendered container and
// the certificates of the rendered Secrets at the paths the pod mounts them. See serveRendered.
func TestChartServes(t *testing.T) {
	t.Parallel()
	serveRendered(t, filepath.Join(repoRoot, "_output/bin/sandbox-apiserver"))
}

// serveRendered renders the chart (generated certificates, one bundled etcd member), starts etcd
// with the StatefulSet's command and bin with the Deployment's arguments, and checks that the
// server serves the group-versions of the rendered APIServices over TLS that verifies against
// their caBundle for the Service's name, storing in that etcd over its client certificate.
//
// Outside a cluster some arguments must differ, and only those are changed: the addresses
// (etcd's URLs and the server's --etcd-servers and port, on 127.0.0.1), the file paths (the
// Secrets' mount paths, to a directory), the kube-apiserver's address and credentials (a
// kubeconfig instead of the in-cluster configuration) and the leader election Lease's name (so
// as not to take the local control plane's own server's Lease). The APIServices themselves are
// not applied: the local control plane's own registration has the same names, and the aggregator
// needs no more than what is checked here (the Service name in the certificate, the caBundle, the
// group-versions served).
func serveRendered(t *testing.T, bin string) {
	t.Helper()
	r := renderChart(t, installNamespace, "--set", "etcd.bundled.replicas=1")
	dir := t.TempDir()

	// Every Secret volume of a container, written where its mount path points.
	mounts := func(kind, name string) (o renderedObject, paths map[string]string) {
		o = r.find(t, kind, name)
		spec := o.Spec.Template.Spec
		paths = map[string]string{}
		for _, m := range spec.Containers[0].VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name != m.Name || v.Secret == nil {
					continue
				}
				local := filepath.Join(dir, name, m.Name)
				if err := os.MkdirAll(local, 0o700); err != nil {
					t.Fatal(err)
				}
				for key, val := range r.find(t, "Secret", v.Secret.SecretName).Data {
					b, err := base64.StdEncoding.DecodeString(val)
					if err != nil {
						t.Fatalf("Secret %s key %s: %v", v.Secret.SecretName, key, err)
					}
					if err := os.WriteFile(filepath.Join(local, key), b, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				paths[m.MountPath] = local
			}
		}
		return o, paths
	}

	etcdSet, etcdPaths := mounts("StatefulSet", "sandbox-etcd")
	clientPort, peerPort, metricsPort := haFreePort(t), haFreePort(t), haFreePort(t)
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", peerPort)
	etcdArgs := rewriteArgs(etcdSet.Spec.Template.Spec.Containers[0].Command[1:], etcdPaths, map[string]string{
		"--name":                        "sandbox-etcd-0",
		"--data-dir":                    filepath.Join(dir, "etcd-data"),
		"--listen-client-urls":          clientURL,
		"--advertise-client-urls":       clientURL,
		"--listen-peer-urls":            peerURL,
		"--initial-advertise-peer-urls": peerURL,
		"--listen-metrics-urls":         fmt.Sprintf("http://127.0.0.1:%d", metricsPort),
		"--initial-cluster":             "sandbox-etcd-0=" + peerURL,
	})
	etcdLog := filepath.Join(dir, "etcd.log")
	haPrintLogsOnFailure(t, etcdLog)
	etcd := haStartProcess(t, "etcd", etcdLog, filepath.Join(repoRoot, "_output/tools/bin/etcd"), etcdArgs...)
	t.Cleanup(etcd.stop)

	server, serverPaths := mounts("Deployment", "sandbox-apiserver")
	container := server.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range container.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			env[e.Name] = installNamespace
		}
	}
	port := haFreePort(t)
	kc := filepath.Join(repoRoot, "_output/local/kubeconfigs/sandbox-apiserver.kubeconfig")
	serverArgs := rewriteArgs(container.Args, serverPaths, map[string]string{
		"--etcd-servers":                    clientURL,
		"--secure-port":                     fmt.Sprint(port),
		"--leader-elect-resource-name":      "install-test-" + randSuffix(6),
		"--leader-elect-resource-namespace": "kube-system",
	})
	for i := range serverArgs {
		for name, val := range env {
			serverArgs[i] = strings.ReplaceAll(serverArgs[i], "$("+name+")", val)
		}
	}
	serverArgs = append(serverArgs, "--bind-address=127.0.0.1", "--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc)
	serverLog := filepath.Join(dir, "sandbox-apiserver.log")
	haPrintLogsOnFailure(t, serverLog)
	proc := haStartProcess(t, "sandbox-apiserver", serverLog, bin, serverArgs...)
	t.Cleanup(proc.stop)

	// The aggregator's view: TLS verified against the caBundle for the Service's name.
	caBundle, err := base64.StdEncoding.DecodeString(r.all("APIService")[0].Spec.CABundle)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		t.Fatal("no certificate in the rendered caBundle")
	}
	admin, err := tls.LoadX509KeyPair(filepath.Join(certsDir, "admin.crt"), filepath.Join(certsDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: "sandbox-apiserver." + installNamespace + ".svc", Certificates: []tls.Certificate{admin},
	}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	get := func(path string) (int, string, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String(), nil
	}
	haPoll(t, 3*time.Minute, 250*time.Millisecond, "the rendered server ready", func() (bool, string) {
		if proc.exited() || etcd.exited() {
			t.Fatalf("a process exited during start-up; see the logs")
		}
		code, body, err := get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
	})
	// /readyz answers before the authentication configuration (the front proxy's and the client
	// CA, read from kube-system) is loaded; until then an authenticated request is a 503.
	var code int
	var body string
	haPoll(t, time.Minute, 250*time.Millisecond, "the rendered server to authenticate the admin", func() (bool, string) {
		var err error
		code, body, err = get("/apis")
		return err == nil && code != http.StatusServiceUnavailable, fmt.Sprintf("%d %q %v", code, body, err)
	})

	// Every rendered APIService's group-version is served, v1beta1 preferred as its priority says.
	if code != http.StatusOK {
		t.Fatalf("GET /apis: %d\n%s", code, body)
	}
	var discovery struct {
		Groups []apiGroup `json:"groups"`
	}
	if err := json.Unmarshal([]byte(body), &discovery); err != nil {
		t.Fatalf("decoding /apis: %v", err)
	}
	for _, a := range r.all("APIService") {
		i := slices.IndexFunc(discovery.Groups, func(g apiGroup) bool { return g.Name == a.Spec.Group })
		if i < 0 {
			t.Errorf("APIService %s: group %s not served", a.Metadata.Name, a.Spec.Group)
			continue
		}
		g := discovery.Groups[i]
		if !slices.ContainsFunc(g.Versions, func(v groupVersion) bool { return v.GroupVersion == a.Spec.Group+"/"+a.Spec.Version }) {
			t.Errorf("APIService %s: %s/%s not served", a.Metadata.Name, a.Spec.Group, a.Spec.Version)
		}
		if g.PreferredVersion.Version != "v1beta1" {
			t.Errorf("group %s prefers %s, want v1beta1", g.Name, g.PreferredVersion.Version)
		}
	}
	// A list is read from etcd, over the rendered client certificate.
	for _, path := range []string{"/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes", "/apis/extensions.agents.x-k8s.io/v1beta1/sandboxtemplates"} {
		if code, body, err := get(path); err != nil || code != http.StatusOK || !strings.Contains(body, `"items"`) {
			t.Errorf("GET %s: %d %v\n%s", path, code, err, indent(body))
		}
	}
}

// apiGroup and groupVersion are what serveRendered reads of /apis.
type apiGroup struct {
	Name             string         `json:"name"`
	Versions         []groupVersion `json:"versions"`
	PreferredVersion groupVersion   `json:"preferredVersion"`
}

type groupVersion struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

// rewriteArgs returns args with the value of each flag in set replaced, and every path under a
// key of paths moved to the directory it maps to.
func rewriteArgs(args []string, paths, set map[string]string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := set[name]; ok {
			a = name + "=" + v
		}
		for from, to := range paths {
			a = strings.ReplaceAll(a, from+"/", to+"/")
		}
		out = append(out, a)
	}
	return out
}
