// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// fourKinds is one object of each kind: Sandbox x, SandboxTemplate t, SandboxClaim c and
// SandboxWarmPool p (both from t).
const fourKinds = `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: x
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: t
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: c
spec:
  sandboxTemplateRef:
    name: t
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: p
spec:
  replicas: 1
  sandboxTemplateRef:
    name: t
`

// claimYAML is a SandboxClaim of the template t.
func claimYAML(name string) string {
	return fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: %s
spec:
  sandboxTemplateRef:
    name: t
`, name)
}

// grantTenant gives user, in ns, what a tenant of the sandbox service gets: full use of
// SandboxClaims, and reading and using (claiming from) SandboxTemplates, through a Role and a
// RoleBinding.
func grantTenant(t *testing.T, ns, user string) {
	t.Helper()
	applyYAML(t, ns, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: sandbox-tenant
rules:
- apiGroups: ["extensions.agents.x-k8s.io"]
  resources: ["sandboxclaims"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["extensions.agents.x-k8s.io"]
  resources: ["sandboxtemplates"]
  verbs: ["get", "list", "watch", "use"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: sandbox-tenant
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: sandbox-tenant
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: %s
`, user))
}

// bindClusterRole binds user to a ClusterRole: in ns through a RoleBinding, or cluster-wide
// through a ClusterRoleBinding (deleted when the test ends) when ns is empty.
func bindClusterRole(t *testing.T, ns, user, clusterRole string) {
	t.Helper()
	if ns != "" {
		kubectl(t, "create", "rolebinding", user+"-"+clusterRole, "-n", ns, "--clusterrole="+clusterRole, "--user="+user)
		return
	}
	name := "e2e-" + user + "-" + clusterRole
	kubectl(t, "create", "clusterrolebinding", name, "--clusterrole="+clusterRole, "--user="+user)
	t.Cleanup(func() {
		if _, stderr, err := kubectlErr(t, "delete", "clusterrolebinding", name, "--ignore-not-found"); err != nil {
			t.Errorf("deleting clusterrolebinding %s: %v\n%s", name, err, stderr)
		}
	})
}

// canI runs `kubectl auth can-i ARGS` as the user of kubeconfig (the admin when empty) and
// returns its answer.
func canI(t *testing.T, kubeconfig string, args ...string) bool {
	t.Helper()
	out, stderr, err := kubectlAsErr(t, kubeconfig, append([]string{"auth", "can-i"}, args...)...)
	switch answer := strings.TrimSpace(out); {
	case answer == "yes" && err == nil:
		return true
	case strings.HasPrefix(answer, "no"):
		return false
	default:
		t.Fatalf("kubectl auth can-i %s: %q, %v\n%s", shellJoin(args), out, err, stderr)
		return false
	}
}

// waitCanI waits until the admin's `kubectl auth can-i ARGS` says yes: RBAC objects just made,
// and roles aggregated by the controller-manager, take a moment to be in effect.
func waitCanI(t *testing.T, args ...string) {
	t.Helper()
	eventually(t, waitTimeout, "kubectl auth can-i "+shellJoin(args)+" to say yes", func() (bool, string) {
		return canI(t, "", args...), "no"
	})
}

// forbidden is the message of a 403 for user doing verb on resource of group in ns (the cluster
// scope when ns is empty).
func forbidden(user, verb, resource, group, ns string) string {
	scope := "at the cluster scope"
	if ns != "" {
		scope = fmt.Sprintf("in the namespace %q", ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q %s", user, verb, resource, group, scope)
}

const (
	agentsGroup     = "agents.x-k8s.io"
	extensionsGroup = "extensions.agents.x-k8s.io"
)

// TestTenantRBAC gives two tenants a Role each in their own namespace and checks what each can
// do there and in the other's namespace, and that kubectl auth can-i agrees with the server.
func TestTenantRBAC(t *testing.T) {
	t.Parallel()
	nsA, nsB := newNamespace(t), newNamespace(t)
	userA, userB := "tenant-a-"+randSuffix(5), "tenant-b-"+randSuffix(5)
	kcA, kcB := newUser(t, userA), newUser(t, userB)
	for _, tenant := range []struct{ ns, user string }{{nsA, userA}, {nsB, userB}} {
		applyYAML(t, tenant.ns, fourKinds)
		grantTenant(t, tenant.ns, tenant.user)
		waitCanI(t, "create", "sandboxclaims", "-n", tenant.ns, "--as="+tenant.user)
	}

	asA := func(stdin string, args ...string) func() (string, string, error) {
		return func() (string, string, error) {
			return kubectlWith(t, kubectlOptions{kubeconfig: kcA, stdin: stdin}, args...)
		}
	}
	// Every row: what kubectl auth can-i is asked, and the same request made for real by tenant A.
	checks := []struct {
		canI    []string
		allowed bool
		do      func() (stdout, stderr string, err error)
		denial  string // the 403 message when not allowed
	}{
		// Tenant A in its own namespace.
		{[]string{"create", "sandboxclaims", "-n", nsA}, true,
			asA(claimYAML("mine"), "create", "-n", nsA, "-f", "-"), ""},
		{[]string{"get", "sandboxclaims", "-n", nsA}, true,
			asA("", "get", "sandboxclaim", "mine", "-n", nsA), ""},
		{[]string{"list", "sandboxclaims", "-n", nsA}, true,
			asA("", "get", "sandboxclaims", "-n", nsA), ""},
		{[]string{"patch", "sandboxclaims", "-n", nsA}, true,
			asA("", "label", "sandboxclaim", "mine", "-n", nsA, "owner=a"), ""},
		{[]string{"delete", "sandboxclaims", "-n", nsA}, true,
			asA("", "delete", "sandboxclaim", "c", "-n", nsA), ""},
		{[]string{"list", "sandboxtemplates", "-n", nsA}, true,
			asA("", "get", "sandboxtemplates", "-n", nsA), ""},
		{[]string{"create", "sandboxtemplates", "-n", nsA}, false,
			asA("", "create", "-n", nsA, "-f", examplesDir+"/python-sandbox-template.yaml"),
			forbidden(userA, "create", "sandboxtemplates", extensionsGroup, nsA)},
		{[]string{"create", "sandboxes", "-n", nsA}, false,
			asA("", "create", "-n", nsA, "-f", examplesDir+"/sandbox-hello-world.yaml"),
			forbidden(userA, "create", "sandboxes", agentsGroup, nsA)},
		{[]string{"patch", "sandboxwarmpools", "--subresource=scale", "-n", nsA}, false,
			asA("", "scale", "swp/p", "-n", nsA, "--replicas=3"),
			forbidden(userA, "get", "sandboxwarmpools", extensionsGroup, nsA)},
		// Tenant A in tenant B's namespace.
		{[]string{"create", "sandboxclaims", "-n", nsB}, false,
			asA(claimYAML("intruder"), "create", "-n", nsB, "-f", "-"),
			forbidden(userA, "create", "sandboxclaims", extensionsGroup, nsB)},
		{[]string{"get", "sandboxclaims", "-n", nsB}, false,
			asA("", "get", "sandboxclaim", "c", "-n", nsB),
			forbidden(userA, "get", "sandboxclaims", extensionsGroup, nsB)},
		{[]string{"list", "sandboxclaims", "-n", nsB}, false,
			asA("", "get", "sandboxclaims", "-n", nsB),
			forbidden(userA, "list", "sandboxclaims", extensionsGroup, nsB)},
		// kubectl get --watch lists first; a bare watch request shows the watch verb denied.
		{[]string{"watch", "sandboxclaims", "-n", nsB}, false,
			asA("", "get", "sandboxclaims", "-n", nsB, "--watch", "--request-timeout=20s"),
			forbidden(userA, "list", "sandboxclaims", extensionsGroup, nsB)},
		{[]string{"watch", "sandboxclaims", "-n", nsB}, false,
			asA("", "get", "--request-timeout=20s", "--raw",
				"/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/"+nsB+"/sandboxclaims?watch=true&timeoutSeconds=5"),
			forbidden(userA, "watch", "sandboxclaims", extensionsGroup, nsB)},
		{[]string{"delete", "sandboxclaims", "-n", nsB}, false,
			asA("", "delete", "sandboxclaim", "c", "-n", nsB),
			forbidden(userA, "delete", "sandboxclaims", extensionsGroup, nsB)},
		{[]string{"list", "sandboxtemplates", "-n", nsB}, false,
			asA("", "get", "sandboxtemplates", "-n", nsB),
			forbidden(userA, "list", "sandboxtemplates", extensionsGroup, nsB)},
		// Tenant A across all namespaces.
		{[]string{"list", "sandboxclaims", "-A"}, false,
			asA("", "get", "sandboxclaims", "-A"),
			forbidden(userA, "list", "sandboxclaims", extensionsGroup, "")},
	}
	for _, c := range checks {
		what := "kubectl auth can-i " + strings.Join(c.canI, " ")
		if got := canI(t, kcA, c.canI...); got != c.allowed {
			t.Errorf("%s as %s: %v, want %v", what, userA, got, c.allowed)
		}
		if got := canI(t, "", append(c.canI, "--as="+userA)...); got != c.allowed {
			t.Errorf("%s --as=%s: %v, want %v", what, userA, got, c.allowed)
		}
		_, stderr, err := c.do()
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s says yes, but the request failed: %v\n%s", what, err, stderr)
		case !c.allowed:
			expectFailure(t, what+" says no; the request", stderr, err, "Error from server (Forbidden)", c.denial)
		}
	}

	t.Run("watch own claims", func(t *testing.T) {
		w := startWatch(t, kcA, 2*waitTimeout, "get", "sandboxclaims", "-n", nsA, "--watch", "-o", "name")
		w.next(t, "the claim listed as the watch starts", fields("sandboxclaim.extensions.agents.x-k8s.io/mine"))
		kubectlAs(t, kcA, "annotate", "sandboxclaim", "mine", "-n", nsA, "note=watched")
		w.next(t, "the claim again after kubectl annotate", fields("sandboxclaim.extensions.agents.x-k8s.io/mine"))
		out := kubectlAs(t, kcA, "delete", "sandboxclaim", "mine", "-n", nsA)
		expectContains(t, "kubectl delete as the tenant", out, `sandboxclaim.extensions.agents.x-k8s.io "mine" deleted`)
	})

	t.Run("tenant B", func(t *testing.T) {
		expectNames(t, "tenant B lists its claims", kubectlAs(t, kcB, "get", "sandboxclaims", "-n", nsB, "-o", "name"),
			"sandboxclaim.extensions.agents.x-k8s.io/c")
		_, stderr, err := kubectlAsErr(t, kcB, "get", "sandboxclaims", "-n", nsA)
		expectFailure(t, "tenant B lists tenant A's claims", stderr, err, forbidden(userB, "list", "sandboxclaims", extensionsGroup, nsA))
	})

	t.Run("impersonation", func(t *testing.T) {
		// The admin may act as tenant A, and then has exactly tenant A's rights.
		kubectl(t, "get", "sandboxclaims", "-n", nsA, "--as="+userA)
		_, stderr, err := kubectlErr(t, "get", "sandboxclaims", "-n", nsB, "--as="+userA)
		expectFailure(t, "the admin as tenant A in tenant B's namespace", stderr, err, forbidden(userA, "list", "sandboxclaims", extensionsGroup, nsB))
		// Tenant A may not act as tenant B.
		_, stderr, err = kubectlAsErr(t, kcA, "get", "sandboxclaims", "-n", nsB, "--as="+userB)
		expectFailure(t, "tenant A impersonating tenant B", stderr, err, "Error from server (Forbidden)", fmt.Sprintf("User %q cannot impersonate", userA))
	})
}

// TestViewRole binds a user to the built-in view ClusterRole: it reads all four kinds everywhere
// and may change nothing, not even through the scale and status subresources.
func TestViewRole(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fourKinds)
	viewer := "viewer-" + randSuffix(5)
	kc := newUser(t, viewer)
	bindClusterRole(t, "", viewer, "view")
	waitCanI(t, "list", "sandboxwarmpools", "-n", ns, "--as="+viewer)

	expectIncludes(t, "the viewer lists all four kinds",
		kubectlAs(t, kc, "get", "sandboxes,sandboxclaims,sandboxtemplates,sandboxwarmpools", "-n", ns, "-o", "name"),
		"sandbox.agents.x-k8s.io/x", "sandboxclaim.extensions.agents.x-k8s.io/c",
		"sandboxtemplate.extensions.agents.x-k8s.io/t", "sandboxwarmpool.extensions.agents.x-k8s.io/p")
	for _, obj := range []string{"sandbox/x", "sandboxclaim/c", "sandboxtemplate/t", "swp/p"} {
		kubectlAs(t, kc, "get", obj, "-n", ns, "-o", "yaml")
	}
	all := kubectlAs(t, kc, "get", "agents", "-A", "-o", "name")
	expectContains(t, "the viewer lists the category across namespaces", all, "sandbox.agents.x-k8s.io/x\n", "sandboxwarmpool.extensions.agents.x-k8s.io/p\n")

	checks := []struct {
		canI    []string
		allowed bool
		args    []string
		stdin   string
		denial  string
	}{
		{[]string{"get", "sandboxes"}, true, []string{"get", "sandbox", "x"}, "", ""},
		{[]string{"create", "sandboxes"}, false, []string{"create", "-f", "-"}, strings.Replace(fourKinds[:strings.Index(fourKinds, "---")], "name: x", "name: viewers-sandbox", 1),
			forbidden(viewer, "create", "sandboxes", agentsGroup, ns)},
		{[]string{"create", "sandboxclaims"}, false, []string{"create", "-f", "-"}, claimYAML("viewers-claim"),
			forbidden(viewer, "create", "sandboxclaims", extensionsGroup, ns)},
		{[]string{"delete", "sandboxtemplates"}, false, []string{"delete", "sandboxtemplate", "t"}, "",
			forbidden(viewer, "delete", "sandboxtemplates", extensionsGroup, ns)},
		{[]string{"patch", "sandboxes", "--subresource=scale"}, false, []string{"scale", "sandbox/x", "--replicas=0"}, "",
			forbidden(viewer, "patch", "sandboxes/scale", agentsGroup, ns)},
		{[]string{"patch", "sandboxwarmpools", "--subresource=scale"}, false, []string{"scale", "swp/p", "--replicas=3"}, "",
			forbidden(viewer, "patch", "sandboxwarmpools/scale", extensionsGroup, ns)},
		{[]string{"patch", "sandboxes", "--subresource=status"}, false,
			[]string{"patch", "sandbox", "x", "--subresource=status", "--type=merge", "-p", `{"status":{"service":"hijacked"}}`}, "",
			// kubectl patch reads the object first, through the same subresource.
			forbidden(viewer, "get", "sandboxes/status", agentsGroup, ns)},
	}
	for _, c := range checks {
		what := "kubectl auth can-i " + strings.Join(c.canI, " ")
		if got := canI(t, kc, append(c.canI, "-n", ns)...); got != c.allowed {
			t.Errorf("%s as the viewer: %v, want %v", what, got, c.allowed)
		}
		_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: c.stdin}, append(c.args, "-n", ns)...)
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s says yes, but the request failed: %v\n%s", what, err, stderr)
		case !c.allowed:
			expectFailure(t, what+" says no; the request", stderr, err, "Error from server (Forbidden)", c.denial)
		}
	}
	if got := jsonpath(t, ns, "{.spec.replicas} {.status.service}", "sandbox", "x"); got != "1 " {
		t.Errorf("after the viewer's refused writes: spec.replicas and status.service = %q, want \"1 \"", got)
	}
}

// clusterRoleAllows reports whether the rules of a ClusterRole allow verb on group/resource.
func clusterRoleAllows(role rbacv1.ClusterRole, verb, group, resource string) bool {
	match := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, r := range role.Rules {
		if match(r.APIGroups, group) && match(r.Resources, resource) && match(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// TestAggregatedRoles checks that the built-in admin, edit and view ClusterRoles include the
// sandbox resources (aggregated from artifacts/local/rbac.yaml) and that users bound to edit and
// admin can work with them.
func TestAggregatedRoles(t *testing.T) {
	t.Parallel()
	eventually(t, waitTimeout, "the edit ClusterRole to aggregate the sandbox rules", func() (bool, string) {
		out := kubectl(t, "get", "clusterrole", "edit", "-o", "yaml")
		return strings.Contains(out, "sandboxes") && strings.Contains(out, "sandboxwarmpools/scale"), "not aggregated yet"
	})

	type access struct {
		verb, group, resource string
	}
	var writes, reads []access
	for _, r := range []struct{ group, resource string }{
		{agentsGroup, "sandboxes"}, {extensionsGroup, "sandboxclaims"},
		{extensionsGroup, "sandboxtemplates"}, {extensionsGroup, "sandboxwarmpools"},
	} {
		for _, v := range []string{"get", "list", "watch"} {
			reads = append(reads, access{v, r.group, r.resource})
		}
		for _, v := range []string{"create", "update", "patch", "delete"} {
			writes = append(writes, access{v, r.group, r.resource})
		}
	}
	writes = append(writes, access{"patch", agentsGroup, "sandboxes/scale"}, access{"update", extensionsGroup, "sandboxwarmpools/scale"})
	// Reaching a sandbox through the proxy subresources, with the verbs of every proxied method, is
	// edit's and admin's, not view's.
	for _, v := range []string{"get", "create", "update", "patch", "delete"} {
		writes = append(writes, access{v, agentsGroup, "sandboxes/proxy"}, access{v, extensionsGroup, "sandboxclaims/proxy"})
	}
	for _, name := range []string{"admin", "edit", "view"} {
		var role rbacv1.ClusterRole
		if err := json.Unmarshal([]byte(kubectl(t, "get", "clusterrole", name, "-o", "json")), &role); err != nil {
			t.Fatal(err)
		}
		for _, a := range reads {
			if !clusterRoleAllows(role, a.verb, a.group, a.resource) {
				t.Errorf("ClusterRole %s does not allow %s %s.%s", name, a.verb, a.resource, a.group)
			}
		}
		for _, a := range writes {
			if got := clusterRoleAllows(role, a.verb, a.group, a.resource); got != (name != "view") {
				t.Errorf("ClusterRole %s allows %s %s.%s: %v, want %v", name, a.verb, a.resource, a.group, got, name != "view")
			}
		}
		for _, sub := range []string{"sandboxes/status", "sandboxwarmpools/status", "sandboxclaims/status"} {
			if clusterRoleAllows(role, "patch", "", sub) || clusterRoleAllows(role, "patch", agentsGroup, sub) || clusterRoleAllows(role, "patch", extensionsGroup, sub) {
				t.Errorf("ClusterRole %s lets users write %s, which only the controllers write", name, sub)
			}
		}
	}

	t.Run("edit", func(t *testing.T) {
		t.Parallel()
		ns, other := newNamespace(t), newNamespace(t)
		editor := "editor-" + randSuffix(5)
		kc := newUser(t, editor)
		bindClusterRole(t, ns, editor, "edit")
		waitCanI(t, "create", "sandboxes", "-n", ns, "--as="+editor)

		if !canI(t, kc, "create", "sandboxes", "-n", ns) || !canI(t, kc, "patch", "sandboxwarmpools", "--subresource=scale", "-n", ns) {
			t.Errorf("kubectl auth can-i: the editor may not create sandboxes or scale warm pools")
		}
		out := kubectlAsStdin(t, kc, fourKinds, "apply", "-n", ns, "-f", "-")
		expectContains(t, "kubectl apply as the editor", out, "sandbox.agents.x-k8s.io/x created", "sandboxwarmpool.extensions.agents.x-k8s.io/p created")
		kubectlAs(t, kc, "scale", "sandbox/x", "-n", ns, "--replicas=0")
		kubectlAs(t, kc, "scale", "swp/p", "-n", ns, "--replicas=4")
		if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "x") + " " + jsonpath(t, ns, "{.spec.replicas}", "swp", "p"); got != "0 4" {
			t.Errorf("after the editor scaled: sandbox and warm pool replicas = %q, want \"0 4\"", got)
		}

		if canI(t, kc, "patch", "sandboxes", "--subresource=status", "-n", ns) {
			t.Errorf("kubectl auth can-i: the editor may write sandbox status")
		}
		_, stderr, err := kubectlAsErr(t, kc, "patch", "sandbox", "x", "-n", ns, "--subresource=status", "--type=merge", "-p", `{"status":{"service":"x"}}`)
		expectFailure(t, "the editor writes sandbox status", stderr, err, forbidden(editor, "get", "sandboxes/status", agentsGroup, ns))

		// The RoleBinding reaches no further than its namespace.
		if canI(t, kc, "create", "sandboxes", "-n", other) {
			t.Errorf("kubectl auth can-i: the editor may create sandboxes in another namespace")
		}
		_, stderr, err = kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: fourKinds}, "create", "-n", other, "-f", "-")
		expectFailure(t, "the editor creates in another namespace", stderr, err, forbidden(editor, "create", "sandboxes", agentsGroup, other))
	})

	t.Run("admin", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		nsAdmin := "ns-admin-" + randSuffix(5)
		kc := newUser(t, nsAdmin)
		bindClusterRole(t, ns, nsAdmin, "admin")
		waitCanI(t, "create", "sandboxtemplates", "-n", ns, "--as="+nsAdmin)
		out := kubectlAsStdin(t, kc, fourKinds, "apply", "-n", ns, "-f", "-")
		expectContains(t, "kubectl apply as the namespace admin", out, "sandboxtemplate.extensions.agents.x-k8s.io/t created")
		kubectlAs(t, kc, "scale", "sandbox/x", "-n", ns, "--replicas=0")
		// Deleting is allowed; finishing the deletion is up to the controllers and their finalizers.
		out = kubectlAs(t, kc, "delete", "sandboxclaim/c", "sandboxtemplate/t", "-n", ns, "--wait=false")
		expectContains(t, "kubectl delete as the namespace admin", out,
			`sandboxclaim.extensions.agents.x-k8s.io "c" deleted`, `sandboxtemplate.extensions.agents.x-k8s.io "t" deleted`)
	})
}
