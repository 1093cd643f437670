// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// kindRefs are the type prefixes kubectl prints for each kind (`-o name`, apply and delete).
var kindRefs = map[string]string{
	"Sandbox":         "sandbox.agents.x-k8s.io",
	"SandboxClaim":    "sandboxclaim.extensions.agents.x-k8s.io",
	"SandboxTemplate": "sandboxtemplate.extensions.agents.x-k8s.io",
	"SandboxWarmPool": "sandboxwarmpool.extensions.agents.x-k8s.io",
}

// example is one object of artifacts/examples.
type example struct {
	file, apiVersion, kind, name string
}

// ref is how kubectl names the object: sandbox.agents.x-k8s.io/hello-world.
func (e example) ref() string { return kindRefs[e.kind] + "/" + e.name }

// loadExamples reads every object of artifacts/examples/*.yaml.
func loadExamples(t *testing.T) []example {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s: %v", examplesDir, err)
	}
	var res []example
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(r, 4096)
		for {
			var obj struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if obj.Kind == "" {
				continue
			}
			if kindRefs[obj.Kind] == "" {
				t.Fatalf("%s: unexpected kind %q", f, obj.Kind)
			}
			res = append(res, example{filepath.Base(f), obj.APIVersion, obj.Kind, obj.Metadata.Name})
		}
		r.Close()
	}
	return res
}

// TestExamples applies every example the way a user would, once with client-side and once with
// server-side apply (each in a fresh namespace), and then works with the objects with get,
// describe, patch, edit, label, watch and delete.
func TestExamples(t *testing.T) {
	t.Parallel()
	examples := loadExamples(t)
	for kind := range kindRefs {
		if !slices.ContainsFunc(examples, func(e example) bool { return e.kind == kind }) {
			t.Errorf("artifacts/examples has no %s", kind)
		}
	}

	t.Run("client-side apply", func(t *testing.T) {
		t.Parallel()
		ns := newRealNamespace(t)
		out := kubectl(t, "apply", "-n", ns, "-f", examplesDir)
		for _, e := range examples {
			expectContains(t, "kubectl apply", out, e.ref()+" created")
		}
		// Applying again changes nothing: defaults the server filled in are no diff.
		out = kubectl(t, "apply", "-n", ns, "-f", examplesDir)
		for _, e := range examples {
			expectContains(t, "kubectl apply (again)", out, e.ref()+" unchanged")
		}
		expectGenerations(t, ns, examples, 1)
		checkExamples(t, ns, examples)
		expectExamplesReady(t, ns, examples)
		workWithExamples(t, ns)
	})

	t.Run("server-side apply", func(t *testing.T) {
		t.Parallel()
		ns := newRealNamespace(t)
		out := kubectl(t, "apply", "--server-side", "-n", ns, "-f", examplesDir)
		for _, e := range examples {
			expectContains(t, "kubectl apply --server-side", out, e.ref()+" serverside-applied")
		}
		out = kubectl(t, "apply", "--server-side", "-n", ns, "-f", examplesDir)
		for _, e := range examples {
			expectContains(t, "kubectl apply --server-side (again)", out, e.ref()+" serverside-applied")
		}
		expectGenerations(t, ns, examples, 1)
		checkExamples(t, ns, examples)
		serverSideApplyOwnership(t, ns)
	})
}

// expectGenerations checks metadata.generation of every example object.
func expectGenerations(t *testing.T, ns string, examples []example, want int) {
	t.Helper()
	out := jsonpath(t, ns, `{range .items[*]}{.kind}/{.metadata.name}={.metadata.generation}{"\n"}{end}`,
		"sandboxes,sandboxclaims,sandboxtemplates,sandboxwarmpools")
	for _, e := range examples {
		expectContains(t, "metadata.generation", out, fmt.Sprintf("%s/%s=%d\n", e.kind, e.name, want))
	}
}

// checkExamples looks at the applied examples as a user would: the category, tables, wide
// tables, YAML with the defaults filled in, and describe.
func checkExamples(t *testing.T, ns string, examples []example) {
	t.Helper()
	var refs []string
	for _, e := range examples {
		refs = append(refs, e.ref())
	}
	// The claims' controller adds Sandboxes of its own, named after the claims.
	expectIncludes(t, "kubectl get agents -o name", kubectl(t, "get", "agents", "-n", ns, "-o", "name"), refs...)

	namesOf := func(kind string) []string {
		var res []string
		for _, e := range examples {
			if e.kind == kind {
				res = append(res, e.name)
			}
		}
		return res
	}
	tables := []struct {
		resource, kind string
		columns, wide  []string
		cells          map[string]map[string]string // name -> column -> cell, checked in the wide table
	}{{
		resource: "sandboxes", kind: "Sandbox",
		columns: []string{"READY", "REASON", "REPLICAS"},
		wide:    []string{"READY", "REASON", "REPLICAS", "SERVICE", "POD IPS", "SHUTDOWN TIME"},
		cells: map[string]map[string]string{
			"agent-with-storage": {"SHUTDOWN TIME": "2099-01-01T00:00:00Z"},
			"hello-world":        {"SHUTDOWN TIME": "<none>"},
		},
	}, {
		resource: "sandboxclaims", kind: "SandboxClaim",
		columns: []string{"TEMPLATE", "SANDBOX", "READY"},
		wide:    []string{"TEMPLATE", "SANDBOX", "READY", "REASON", "WARM POOL", "POD IPS"},
		cells: map[string]map[string]string{
			"data-prep":         {"TEMPLATE": "jupyter-template", "WARM POOL": "fast-pool"},
			"my-secure-sandbox": {"TEMPLATE": "secure-datascience-template", "WARM POOL": "default"},
		},
	}, {
		resource: "sandboxtemplates", kind: "SandboxTemplate",
		columns: []string{"NETWORK POLICY", "ENV INJECTION"},
		wide:    []string{"NETWORK POLICY", "ENV INJECTION", "SERVICE", "IMAGES"},
		cells: map[string]map[string]string{
			"secure-datascience-template": {"NETWORK POLICY": "Managed", "ENV INJECTION": "Disallowed", "IMAGES": "busybox"},
		},
	}, {
		resource: "sandboxwarmpools", kind: "SandboxWarmPool",
		columns: []string{"READY", "REPLICAS", "TEMPLATE"},
		wide:    []string{"READY", "REPLICAS", "TEMPLATE", "CURRENT", "UPDATE STRATEGY", "SELECTOR"},
		cells: map[string]map[string]string{
			"sandboxwarmpool-example": {"REPLICAS": "1", "TEMPLATE": "secure-datascience-template", "UPDATE STRATEGY": "Recreate"},
		},
	}}
	for _, tc := range tables {
		tab := parseTable(t, kubectl(t, "get", tc.resource, "-n", ns))
		expectColumns(t, "kubectl get "+tc.resource, tab, tc.columns...)
		for _, c := range tc.wide[len(tc.columns):] {
			if slices.Contains(tab.header, c) {
				t.Errorf("kubectl get %s: wide column %s shows without -o wide: %q", tc.resource, c, tab.header)
			}
		}
		want := namesOf(tc.kind)
		for _, name := range want {
			tab.row(t, name)
		}

		wide := parseTable(t, kubectl(t, "get", tc.resource, "-n", ns, "-o", "wide"))
		expectColumns(t, "kubectl get "+tc.resource+" -o wide", wide, tc.wide...)
		for name, cells := range tc.cells {
			row := wide.row(t, name)
			for col, want := range cells {
				if row[col] != want {
					t.Errorf("kubectl get %s -o wide: %s %s is %q, want %q", tc.resource, name, col, row[col], want)
				}
			}
		}

		// describe prints every object with its kind and API version.
		desc := kubectl(t, "describe", tc.resource, "-n", ns)
		for _, name := range want {
			if !regexp.MustCompile(`(?m)^Name:\s+` + regexp.QuoteMeta(name) + `$`).MatchString(desc) {
				t.Errorf("kubectl describe %s: no Name: %s in\n%s", tc.resource, name, indent(desc))
			}
		}
		expectContains(t, "kubectl describe "+tc.resource, desc, "Kind:         "+tc.kind, "Namespace:    "+ns)
	}

	desc := kubectl(t, "describe", "sandbox", "agent-with-storage", "-n", ns)
	for _, re := range []string{
		`API Version:\s+agents.x-k8s.io/v1beta1`, `Replicas:\s+1`, `Shutdown Policy:\s+Delete`,
		`Shutdown Time:\s+2099-01-01T00:00:00Z`, `Image:\s+ghcr.io/example/agent:latest`, `Storage:\s+10Gi`,
	} {
		if !regexp.MustCompile(re).MatchString(desc) {
			t.Errorf("kubectl describe sandbox agent-with-storage: no match for %s in\n%s", re, indent(desc))
		}
	}

	checkDefaults(t, ns)
}

// checkDefaults reads the objects back with -o yaml and -o json and checks the defaults the
// server filled in. Two extra objects show the defaults the examples set explicitly; they are
// deleted again at the end.
func checkDefaults(t *testing.T, ns string) {
	t.Helper()
	applyYAML(t, ns, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: defaults-claim
spec:
  sandboxTemplateRef:
    name: another-template
  lifecycle:
    shutdownTime: "2099-01-01T00:00:00Z"
---
apiVersion: extensions.agents.x-k8s.io/v1alpha1
kind: SandboxWarmPool
metadata:
  name: defaults-pool
spec:
  replicas: 2
  sandboxTemplateRef:
    name: another-template
`)
	cases := []struct {
		resource, name string
		yamlLines      []string       // lines of -o yaml, compared after trimming spaces
		fields         map[string]any // dotted path in -o json -> value
	}{{
		resource: "sandbox", name: "hello-world",
		yamlLines: []string{"apiVersion: agents.x-k8s.io/v1beta1", "replicas: 1", "shutdownPolicy: Retain", "operatingMode: Running"},
		fields:    map[string]any{"spec.replicas": 1.0, "spec.shutdownPolicy": "Retain", "spec.operatingMode": "Running"},
	}, {
		// The v1.0 examples: each field of a pair filled in from the other, the pool's default.
		resource: "sandbox", name: "suspended-agent",
		yamlLines: []string{"operatingMode: Suspended", "replicas: 0", "agents.x-k8s.io/launch-type: cold"},
		fields:    map[string]any{"spec.replicas": 0.0},
	}, {
		resource: "swp", name: "python-pool",
		yamlLines: []string{"replicas: 1", "readinessGracePeriodSeconds: 120"},
		fields:    map[string]any{"spec.replicas": 1.0, "spec.readinessGracePeriodSeconds": 120.0},
	}, {
		resource: "sandboxclaim", name: "python-by-pool",
		yamlLines: []string{"warmpool: python-pool"},
		fields:    map[string]any{"spec.sandboxTemplateRef.name": "python-runtime-template", "spec.warmPoolRef.name": "python-pool"},
	}, {
		resource: "sandboxtemplate", name: "python-runtime-template",
		yamlLines: []string{"volumeClaimTemplatesPolicy: Disallowed"},
	}, {
		// Read through the other version: the same defaults, converted.
		resource: "sandboxes.v1alpha1.agents.x-k8s.io", name: "hello-world-v1alpha1",
		yamlLines: []string{"apiVersion: agents.x-k8s.io/v1alpha1", "replicas: 1", "shutdownPolicy: Retain"},
		fields:    map[string]any{"spec.replicas": 1.0, "spec.shutdownPolicy": "Retain"},
	}, {
		resource: "sandboxclaim", name: "my-secure-sandbox",
		yamlLines: []string{"warmpool: default"},
		fields:    map[string]any{"spec.warmpool": "default", "spec.sandboxTemplateRef.name": "secure-datascience-template"},
	}, {
		resource: "sandboxclaim", name: "defaults-claim",
		yamlLines: []string{"shutdownPolicy: Retain", "warmpool: default"},
		fields:    map[string]any{"spec.lifecycle.shutdownPolicy": "Retain", "spec.warmpool": "default"},
	}, {
		resource: "sandboxtemplate", name: "secure-datascience-template",
		yamlLines: []string{"networkPolicyManagement: Managed", "envVarsInjectionPolicy: Disallowed"},
		fields:    map[string]any{"spec.networkPolicyManagement": "Managed", "spec.envVarsInjectionPolicy": "Disallowed"},
	}, {
		resource: "swp", name: "defaults-pool",
		yamlLines: []string{"apiVersion: extensions.agents.x-k8s.io/v1beta1", "type: OnReplenish"},
		fields:    map[string]any{"spec.updateStrategy.type": "OnReplenish", "spec.replicas": 2.0},
	}}
	for _, c := range cases {
		out := kubectl(t, "get", c.resource, c.name, "-n", ns, "-o", "yaml")
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			lines = append(lines, strings.TrimSpace(l))
		}
		for _, want := range c.yamlLines {
			if !slices.Contains(lines, want) {
				t.Errorf("kubectl get %s %s -o yaml: no line %q in\n%s", c.resource, c.name, want, indent(out))
			}
		}
		obj := getObject(t, ns, c.resource, c.name)
		for path, want := range c.fields {
			if got, ok := lookup(obj, path); !ok || got != want {
				t.Errorf("%s %s: %s = %v (set: %v), want %v", c.resource, c.name, path, got, ok, want)
			}
		}
	}
	kubectl(t, "delete", "sandboxclaim/defaults-claim", "swp/defaults-pool", "-n", ns, "--wait=false")
}

// workWithExamples changes and deletes the examples with patch, label, edit and delete, and
// watches and filters them.
func workWithExamples(t *testing.T, ns string) {
	t.Helper()

	// Patches of every type. Metadata changes leave metadata.generation alone; spec changes move it.
	out := kubectl(t, "patch", "sandbox", "hello-world", "-n", ns, "--type=merge", "-p", `{"metadata":{"labels":{"tier":"gold"}}}`)
	expectContains(t, "kubectl patch --type=merge", out, "sandbox.agents.x-k8s.io/hello-world patched")
	kubectl(t, "patch", "sandbox", "hello-world", "-n", ns, "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":0}]`)
	kubectl(t, "label", "sandbox", "agent-with-storage", "-n", ns, "tier=silver")
	if got := jsonpath(t, ns, "{.metadata.labels.tier} {.spec.replicas} {.metadata.generation}", "sandbox", "hello-world"); got != "gold 0 2" {
		t.Errorf("after the merge and JSON patches: labels.tier, spec.replicas, generation = %q, want \"gold 0 2\"", got)
	}
	kubectl(t, "patch", "sandboxclaim", "data-prep", "-n", ns, "-p", `{"metadata":{"labels":{"team":"ml"}}}`) // strategic, kubectl's default
	kubectl(t, "label", "sandboxwarmpool", "sandboxwarmpool-example", "-n", ns, "team=ml")
	if got := jsonpath(t, ns, "{.metadata.labels.team} {.metadata.generation}", "sandboxclaim", "data-prep"); got != "ml 1" {
		t.Errorf("after a strategic merge patch of a label: labels.team, generation = %q, want \"ml 1\"", got)
	}

	// Label selectors.
	expectNames(t, "kubectl get sandboxes -l tier=gold", kubectl(t, "get", "sandboxes", "-n", ns, "-l", "tier=gold", "-o", "name"),
		"sandbox.agents.x-k8s.io/hello-world")
	expectNames(t, "kubectl get sandboxes -l 'tier in (gold,silver)'", kubectl(t, "get", "sandboxes", "-n", ns, "-l", "tier in (gold,silver)", "-o", "name"),
		"sandbox.agents.x-k8s.io/agent-with-storage", "sandbox.agents.x-k8s.io/hello-world")
	expectNames(t, "kubectl get sandboxes -l tier,tier!=gold", kubectl(t, "get", "sandboxes", "-n", ns, "-l", "tier,tier!=gold", "-o", "name"),
		"sandbox.agents.x-k8s.io/agent-with-storage")
	expectNames(t, "kubectl get agents -l team=ml", kubectl(t, "get", "agents", "-n", ns, "-l", "team=ml", "-o", "name"),
		"sandboxclaim.extensions.agents.x-k8s.io/data-prep", "sandboxwarmpool.extensions.agents.x-k8s.io/sandboxwarmpool-example")

	// Field selectors on the template reference of claims and warm pools.
	expectNames(t, "kubectl get sandboxclaims --field-selector spec.sandboxTemplateRef.name=secure-datascience-template",
		kubectl(t, "get", "sandboxclaims", "-n", ns, "--field-selector", "spec.sandboxTemplateRef.name=secure-datascience-template", "-o", "name"),
		"sandboxclaim.extensions.agents.x-k8s.io/my-secure-sandbox", "sandboxclaim.extensions.agents.x-k8s.io/my-expiring-sandbox")
	expectNames(t, "kubectl get sandboxclaims --field-selector spec.sandboxTemplateRef.name!=secure-datascience-template",
		kubectl(t, "get", "sandboxclaims", "-n", ns, "--field-selector", "spec.sandboxTemplateRef.name!=secure-datascience-template", "-o", "name"),
		"sandboxclaim.extensions.agents.x-k8s.io/data-prep", "sandboxclaim.extensions.agents.x-k8s.io/python-by-pool",
		"sandboxclaim.extensions.agents.x-k8s.io/workspace-claim")
	expectNames(t, "kubectl get swp --field-selector spec.sandboxTemplateRef.name=secure-datascience-template",
		kubectl(t, "get", "swp", "-n", ns, "--field-selector", "spec.sandboxTemplateRef.name=secure-datascience-template", "-o", "name"),
		"sandboxwarmpool.extensions.agents.x-k8s.io/sandboxwarmpool-example")
	_, stderr, _ := kubectlErr(t, "get", "swp", "-n", ns, "--field-selector", "spec.sandboxTemplateRef.name=jupyter-template")
	expectContains(t, "kubectl get swp --field-selector matching nothing", stderr, "No resources found in "+ns+" namespace")
	_, stderr, err := kubectlErr(t, "get", "sandboxes", "-n", ns, "--field-selector", "spec.replicas=1")
	expectFailure(t, "kubectl get sandboxes --field-selector on an unsupported field", stderr, err, "BadRequest", "spec.replicas")

	// kubectl edit with an editor that changes one field, while a watch on the object sees it.
	w := startWatch(t, "", 2*time.Minute, "get", "sandboxtemplate", "secure-datascience-template", "-n", ns, "--watch", "-o", "name")
	w.next(t, "the template as the watch starts", fields("sandboxtemplate.extensions.agents.x-k8s.io/secure-datascience-template"))
	editor := writeScript(t, "editor.sh", `sed -i -e 's/envVarsInjectionPolicy: Disallowed/envVarsInjectionPolicy: Allowed/' "$1"`)
	out, stderr, err = kubectlWith(t, kubectlOptions{env: []string{"KUBE_EDITOR=" + editor, "TMPDIR=" + t.TempDir()}},
		"edit", "sandboxtemplate", "secure-datascience-template", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl edit: %v\n%s", err, stderr)
	}
	expectContains(t, "kubectl edit", out, "sandboxtemplate.extensions.agents.x-k8s.io/secure-datascience-template edited")
	w.next(t, "the edited template", fields("sandboxtemplate.extensions.agents.x-k8s.io/secure-datascience-template"))
	row := parseTable(t, kubectl(t, "get", "sandboxtemplate", "secure-datascience-template", "-n", ns)).row(t, "secure-datascience-template")
	if row["ENV INJECTION"] != "Allowed" {
		t.Errorf("after kubectl edit: ENV INJECTION is %q, want Allowed", row["ENV INJECTION"])
	}

	// A watch with event types sees a change and the deletion.
	w = startWatch(t, "", 2*time.Minute, "get", "sandbox", "hello-world-v1alpha1", "-n", ns, "--watch", "--output-watch-events")
	w.next(t, "the ADDED line as the watch starts", fields("ADDED", "hello-world-v1alpha1"))
	kubectl(t, "annotate", "sandbox", "hello-world-v1alpha1", "-n", ns, "e2e/watched=yes")
	w.next(t, "the MODIFIED line after kubectl annotate", fields("MODIFIED", "hello-world-v1alpha1"))
	out = kubectl(t, "delete", "sandbox", "hello-world-v1alpha1", "-n", ns, "--timeout=60s")
	expectContains(t, "kubectl delete sandbox", out, `sandbox.agents.x-k8s.io "hello-world-v1alpha1" deleted`)
	w.next(t, "the DELETED line after kubectl delete", fields("DELETED", "hello-world-v1alpha1"))
	_, stderr, err = kubectlErr(t, "get", "sandbox", "hello-world-v1alpha1", "-n", ns)
	expectFailure(t, "kubectl get of a deleted sandbox", stderr, err, "NotFound", `"hello-world-v1alpha1" not found`)

	// Deleting by file.
	out = kubectl(t, "delete", "-n", ns, "-f", filepath.Join(examplesDir, "sandboxclaim.yaml"),
		"-f", filepath.Join(examplesDir, "sandbox-hello-world.yaml"), "--timeout=60s")
	expectContains(t, "kubectl delete -f sandboxclaim.yaml -f sandbox-hello-world.yaml", out,
		`sandboxclaim.extensions.agents.x-k8s.io "my-secure-sandbox" deleted`, `sandbox.agents.x-k8s.io "hello-world" deleted`)
	_, stderr, err = kubectlErr(t, "get", "-n", ns, "-f", filepath.Join(examplesDir, "sandboxclaim.yaml"),
		"-f", filepath.Join(examplesDir, "sandbox-hello-world.yaml"))
	expectFailure(t, "kubectl get -f of the deleted examples", stderr, err,
		`sandboxclaims.extensions.agents.x-k8s.io "my-secure-sandbox" not found`, `sandboxes.agents.x-k8s.io "hello-world" not found`)
}

// TestNamespaceDeletion deletes a namespace holding every example: the namespace controller has
// to list and delete the aggregated resources too, and the namespace goes away.
func TestNamespaceDeletion(t *testing.T) {
	t.Parallel()
	ns := newRealNamespace(t)
	kubectl(t, "apply", "-n", ns, "-f", examplesDir)
	kubectl(t, "delete", "namespace", ns, "--wait=false")

	// While it is Terminating, the namespace's conditions say what holds it up.
	eventually(t, 90*time.Second, "namespace "+ns+" to be gone", func() (bool, string) {
		out, stderr, err := kubectlErr(t, "get", "namespace", ns, "-o",
			`jsonpath={.status.phase}{"\n"}{range .status.conditions[?(@.status=="True")]}{.type}: {.message}{"\n"}{end}`)
		if err != nil {
			return strings.Contains(stderr, "NotFound"), stderr
		}
		return false, out
	})
	out, stderr, err := kubectlErr(t, "get", "agents", "-n", ns, "-o", "name")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("kubectl get agents in the deleted namespace: err %v, stdout %q, stderr %q", err, out, stderr)
	}
}

// serverSideApplyOwnership checks field ownership: a field another manager changed conflicts
// on the next apply until the applier forces it back.
func serverSideApplyOwnership(t *testing.T, ns string) {
	t.Helper()
	managers := jsonpath(t, ns, `{range .metadata.managedFields[*]}{.manager}/{.operation} {end}`, "sandbox", "agent-with-storage")
	expectContains(t, "managedFields of a server-side applied sandbox", managers, "kubectl/Apply")

	kubectl(t, "patch", "sandbox", "agent-with-storage", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":0}}`)
	file := filepath.Join(examplesDir, "sandbox-agent-with-storage.yaml")
	_, stderr, err := kubectlErr(t, "apply", "--server-side", "-n", ns, "-f", file)
	expectFailure(t, "kubectl apply --server-side over a field kubectl patch changed", stderr, err,
		"conflict", "kubectl-patch", ".spec.replicas")
	if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "agent-with-storage"); got != "0" {
		t.Errorf("after the conflicting apply: spec.replicas = %q, want 0 (kept)", got)
	}
	out := kubectl(t, "apply", "--server-side", "--force-conflicts", "-n", ns, "-f", file)
	expectContains(t, "kubectl apply --server-side --force-conflicts", out, "sandbox.agents.x-k8s.io/agent-with-storage serverside-applied")
	if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "agent-with-storage"); got != "1" {
		t.Errorf("after --force-conflicts: spec.replicas = %q, want 1", got)
	}
}
