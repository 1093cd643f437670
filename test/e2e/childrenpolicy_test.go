// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// serverUser is the identity the local plane's sandbox-apiserver talks to the cluster as
// (artifacts/local/rbac.yaml): the rights the chart's children policy fences.
const serverUser = "system:sandbox-apiserver"

// TestServerRightsFencedToItsChildren applies the chart's ValidatingAdmissionPolicy (rendered by
// helm, for the plane's server identity, its binding narrowed to this test's namespace and
// kube-system so that the tests running beside it are not touched) and then acts as whoever holds
// the server's identity (a stolen token, a compromised process): it cannot create a pod that is
// no sandbox's, change or delete a pod, Service or NetworkPolicy it did not make, take one over
// by adding a controller reference, or touch kube-system; each victim is unchanged. Meanwhile the
// server itself works under the policy: a Sandbox gets its pod, a label change reaches the pod, a
// template gets its NetworkPolicy, and deleting the Sandbox removes its pod.
func TestServerRightsFencedToItsChildren(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	suffix := randSuffix(5)
	policy := "sandbox-apiserver-children-" + suffix

	stdout, stderr, err := helmRun(t, nil, "template", "sandbox-apiserver", chartDir, "--namespace", "sandbox-system",
		"--show-only", "templates/childrenpolicy.yaml", "--set", "childrenPolicy.username="+serverUser)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, indent(stderr))
	}
	manifest := strings.ReplaceAll(stdout, "name: sandbox-apiserver-children", "name: "+policy)
	manifest = strings.ReplaceAll(manifest, "policyName: sandbox-apiserver-children", "policyName: "+policy)
	narrowed := strings.Replace(manifest, "  validationActions: [Deny]", "  validationActions: [Deny]\n  matchResources:\n    namespaceSelector:\n"+
		"      matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: ["+ns+", kube-system]}]", 1)
	if narrowed == manifest {
		t.Fatalf("the rendered binding has no validationActions line to narrow:\n%s", indent(manifest))
	}
	applyYAML(t, ns, narrowed)
	t.Cleanup(func() {
		kubectlErr(t, "delete", "validatingadmissionpolicybinding", policy, "--ignore-not-found")
		kubectlErr(t, "delete", "validatingadmissionpolicy", policy, "--ignore-not-found")
	})
	if warnings := kubectl(t, "get", "validatingadmissionpolicy", policy, "-o", "jsonpath={.status.typeChecking.expressionWarnings}"); warnings != "" {
		t.Errorf("the policy's expressions do not type-check: %s", warnings)
	}

	asServer := func(args ...string) (string, string, error) {
		return kubectlErr(t, append([]string{"--as", serverUser}, args...)...)
	}
	createAsServer := func(namespace, manifest string) (string, error) {
		_, stderr, err := kubectlWith(t, kubectlOptions{stdin: manifest}, "--as", serverUser, "create", "-n", namespace, "-f", "-")
		return stderr, err
	}
	pod := func(name, meta string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s%s}\nspec: {containers: [{name: c, image: registry.example/none}]}\n", name, meta)
	}

	// The policy is loaded a moment after it is stored: until then the server's RBAC rights
	// alone answer.
	attempt := 0
	eventually(t, waitTimeout, "the server identity refused a pod controlled by nothing", func() (bool, string) {
		attempt++
		name := fmt.Sprintf("intruder-%d", attempt)
		stderr, err := createAsServer(ns, pod(name, ""))
		if err == nil {
			kubectl(t, "delete", "pod", "-n", ns, name, "--wait=false")
			return false, "created " + name
		}
		return strings.Contains(stderr, policy), stderr
	})
	stderr, err = createAsServer(ns, pod("intruder", ""))
	expectFailure(t, "a pod controlled by nothing", stderr, err, "sandbox-apiserver may create only pods controlled by a Sandbox", ns+"/intruder")

	// The victims: a pod, a Service and a NetworkPolicy the namespace's own users made.
	applyYAML(t, ns, pod("victim", ", labels: {app: victim}")+`---
apiVersion: v1
kind: Service
metadata: {name: victim}
spec: {selector: {app: victim}, ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: victim}
spec: {podSelector: {}, policyTypes: [Ingress]}
`)
	before := map[string]string{}
	for _, kind := range []string{"pod", "service", "networkpolicy"} {
		before[kind] = jsonpath(t, ns, "{.metadata.resourceVersion}", kind, "victim")
	}
	_, stderr, err = asServer("label", "-n", ns, "--overwrite", "pod", "victim", "app=taken")
	expectFailure(t, "relabelling another's pod", stderr, err, "sandbox-apiserver may update only pods", ns+"/victim")
	_, stderr, err = asServer("patch", "-n", ns, "pod", "victim", "--type=merge", "-p",
		`{"metadata":{"ownerReferences":[{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","name":"x","uid":"00000000-0000-0000-0000-000000000001","controller":true}]}}`)
	expectFailure(t, "taking another's pod over with a controller reference", stderr, err, "sandbox-apiserver may update only pods", ns+"/victim")
	for _, kind := range []string{"pod", "service", "networkpolicy"} {
		_, stderr, err = asServer("delete", "-n", ns, kind, "victim", "--wait=false")
		expectFailure(t, "deleting another's "+kind, stderr, err, "sandbox-apiserver may delete only", "it made", ns+"/victim")
	}

	// A pod dressed as a sandbox's: a controller reference without the sandbox-uid label, and
	// with both in kube-system.
	forged := `, ownerReferences: [{apiVersion: agents.x-k8s.io/v1beta1, kind: Sandbox, name: x, uid: 00000000-0000-0000-0000-000000000002, controller: true}]`
	stderr, err = createAsServer(ns, pod("dressed-"+suffix, forged))
	expectFailure(t, "a pod with a Sandbox's controller reference but not its label", stderr, err, "labelled agents.x-k8s.io/sandbox-uid")
	t.Cleanup(func() {
		kubectlErr(t, "delete", "pod", "-n", "kube-system", "dressed-"+suffix, "--ignore-not-found", "--wait=false")
	})
	stderr, err = createAsServer("kube-system", pod("dressed-"+suffix, forged+`, labels: {agents.x-k8s.io/sandbox-uid: 00000000-0000-0000-0000-000000000002}`))
	expectFailure(t, "a sandbox's pod in kube-system", stderr, err, "may not create pods in namespace kube-system")

	for _, kind := range []string{"pod", "service", "networkpolicy"} {
		if got := jsonpath(t, ns, "{.metadata.resourceVersion}", kind, "victim"); got != before[kind] {
			t.Errorf("the victim %s changed: resourceVersion %s, was %s", kind, got, before[kind])
		}
	}
	if got := jsonpath(t, ns, "{.metadata.labels.app}", "pod", "victim"); got != "victim" {
		t.Errorf("the victim pod's label app is %q", got)
	}

	// The server's own work passes the policy: a template's NetworkPolicy, a Sandbox's pod, a
	// change of its labels and its deletion.
	applyYAML(t, ns, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: fenced}
spec:
  podTemplate:
    spec:
      containers: [{name: agent, image: ghcr.io/example/agent:latest}]
---
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: honest}
spec:
  podTemplate:
    metadata: {labels: {stage: one}}
    spec:
      containers: [{name: agent, image: ghcr.io/example/agent:latest}]
`)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/honest", "--timeout=90s")
	eventually(t, waitTimeout, "the template's NetworkPolicy", func() (bool, string) {
		out, _, err := kubectlErr(t, "get", "networkpolicy", "-n", ns, "-o", "name")
		return err == nil && strings.Contains(out, "networkpolicy.networking.k8s.io/fenced"), out
	})
	kubectl(t, "patch", "-n", ns, "sandbox", "honest", "--type=merge", "-p", `{"spec":{"podTemplate":{"metadata":{"labels":{"stage":"two"}}}}}`)
	eventually(t, waitTimeout, "the new label on the sandbox's pod", func() (bool, string) {
		got := jsonpath(t, ns, "{.metadata.labels.stage}", "pod", "honest")
		return got == "two", got
	})
	kubectl(t, "delete", "-n", ns, "sandbox", "honest", "--timeout=90s")
	eventually(t, waitTimeout, "the sandbox's pod deleted", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "pod", "-n", ns, "honest", "--ignore-not-found", "-o", "name")
		return strings.TrimSpace(out) == "", out
	})
}
