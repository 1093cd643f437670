// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiResource is one line of `kubectl api-resources`.
type apiResource struct {
	name, shortNames, apiVersion, namespaced, kind string
}

var sandboxResources = []apiResource{
	{"sandboxes", "sandbox", "agents.x-k8s.io/v1beta1", "true", "Sandbox"},
	{"sandboxclaims", "sandboxclaim", "extensions.agents.x-k8s.io/v1beta1", "true", "SandboxClaim"},
	{"sandboxtemplates", "sandboxtemplate", "extensions.agents.x-k8s.io/v1beta1", "true", "SandboxTemplate"},
	{"sandboxwarmpools", "swp", "extensions.agents.x-k8s.io/v1beta1", "true", "SandboxWarmPool"},
}

func TestDiscovery(t *testing.T) {
	t.Parallel()

	t.Run("api-resources", func(t *testing.T) {
		t.Parallel()
		tab := parseTable(t, kubectl(t, "api-resources"))
		for _, want := range sandboxResources {
			var found []map[string]string
			for _, r := range tab.rows {
				if r["NAME"] == want.name {
					found = append(found, r)
				}
			}
			if len(found) != 1 {
				t.Errorf("kubectl api-resources: %d lines for %s, want 1: %v", len(found), want.name, found)
				continue
			}
			got := apiResource{found[0]["NAME"], found[0]["SHORTNAMES"], found[0]["APIVERSION"], found[0]["NAMESPACED"], found[0]["KIND"]}
			if got != want {
				t.Errorf("kubectl api-resources: got %+v, want %+v", got, want)
			}
		}
	})

	t.Run("category agents", func(t *testing.T) {
		t.Parallel()
		tab := parseTable(t, kubectl(t, "api-resources", "--categories=agents"))
		var got []string
		for _, r := range tab.rows {
			got = append(got, r["NAME"]+" "+r["SHORTNAMES"]+" "+r["APIVERSION"]+" "+r["KIND"])
		}
		var want []string
		for _, r := range sandboxResources {
			want = append(want, r.name+" "+r.shortNames+" "+r.apiVersion+" "+r.kind)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("kubectl api-resources --categories=agents lists %q, want %q", got, want)
		}
		expectNames(t, "kubectl api-resources --categories=agents -o name",
			kubectl(t, "api-resources", "--categories=agents", "-o", "name"),
			"sandboxes.agents.x-k8s.io", "sandboxclaims.extensions.agents.x-k8s.io",
			"sandboxtemplates.extensions.agents.x-k8s.io", "sandboxwarmpools.extensions.agents.x-k8s.io")
	})

	t.Run("api-versions", func(t *testing.T) {
		t.Parallel()
		versions := names(kubectl(t, "api-versions"))
		for _, want := range []string{
			"agents.x-k8s.io/v1beta1", "agents.x-k8s.io/v1alpha1",
			"extensions.agents.x-k8s.io/v1beta1", "extensions.agents.x-k8s.io/v1alpha1",
		} {
			if !slices.Contains(versions, want) {
				t.Errorf("kubectl api-versions lacks %s: %q", want, versions)
			}
		}
	})
}

func TestExplain(t *testing.T) {
	t.Parallel()
	ws := regexp.MustCompile(`\s+`)
	// flat joins explain's wrapped lines, so doc sentences can be matched across line breaks.
	flat := func(s string) string { return ws.ReplaceAllString(s, " ") }

	cases := []struct {
		args []string
		want []string
	}{{
		args: []string{"sandboxclaim.spec.lifecycle.shutdownPolicy"},
		want: []string{
			"KIND: SandboxClaim", "VERSION: v1beta1", "FIELD: shutdownPolicy <string>",
			"Delete", "DeleteForeground", "Retain",
			"DeleteForeground does the same but keeps the claim until the sandbox and pod are gone",
			"Retain (the default)",
		},
	}, {
		args: []string{"sandbox.spec.podTemplate.spec.containers"},
		want: []string{
			"KIND: Sandbox", "GROUP: agents.x-k8s.io", "FIELD: containers <[]Container>",
			"There must be at least one container in a Pod",
			"image <string>", "name <string> -required-", "command <[]string>", "env <[]EnvVar>",
			"volumeMounts <[]VolumeMount>", "resources <ResourceRequirements>",
		},
	}, {
		args: []string{"sandbox.spec.replicas"},
		want: []string{"FIELD: replicas <integer>", "0 to suspend the Sandbox", "scale subresource"},
	}, {
		// The served but not preferred version has its own schema.
		args: []string{"sandboxes.spec.shutdownPolicy", "--api-version=agents.x-k8s.io/v1alpha1"},
		want: []string{"KIND: Sandbox", "VERSION: v1alpha1", "FIELD: shutdownPolicy <string>", "Retain (the default)"},
	}, {
		args: []string{"swp.spec"},
		want: []string{
			// replicas is optional since the v1.0 shape (it defaults to 1).
			"KIND: SandboxWarmPool", "GROUP: extensions.agents.x-k8s.io", "replicas <integer> replicas is the number of ready sandboxes the pool keeps, 1 when unset",
			"sandboxTemplateRef <SandboxTemplateRef>", "updateStrategy <SandboxWarmPoolUpdateStrategy>",
		},
	}, {
		args: []string{"sandbox.spec.operatingMode"},
		want: []string{"KIND: Sandbox", "FIELD: operatingMode <string>", "Running", "Suspended", "kubectl scale --replicas=0"},
	}, {
		args: []string{"sandboxclaim.spec.warmPoolRef"},
		want: []string{"KIND: SandboxClaim", "FIELD: warmPoolRef <SandboxWarmPoolRef>", "The pool decides the template", "name <string> -required-"},
	}, {
		args: []string{"sandboxtemplate.spec.envVarsInjectionPolicy"},
		want: []string{"KIND: SandboxTemplate", "Allowed", "Disallowed", "Overrides", "Disallowed (the default)"},
	}}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			out := kubectl(t, append([]string{"explain"}, c.args...)...)
			expectContains(t, "kubectl explain "+strings.Join(c.args, " "), flat(out), c.want...)
		})
	}
}
