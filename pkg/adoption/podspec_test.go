// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package adoption

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// envSpec is a pod spec with an init container and two regular ones, each with known variables.
func envSpec() corev1.PodSpec {
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "setup", Env: []corev1.EnvVar{{Name: "INIT_MODE", Value: "fast"}}}},
		Containers: []corev1.Container{
			{Name: "agent", Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}},
			{Name: "sidecar"},
		},
	}
}

func TestInjectEnv(t *testing.T) {
	const (
		allowed    = extensionsv1beta1.EnvVarsInjectionPolicyAllowed
		overrides  = extensionsv1beta1.EnvVarsInjectionPolicyOverrides
		disallowed = extensionsv1beta1.EnvVarsInjectionPolicyDisallowed
	)
	type ev = extensionsv1beta1.EnvVar
	// env of init container, first and second regular container after injection.
	type want struct{ setup, agent, sidecar []corev1.EnvVar }
	unchanged := want{
		setup: []corev1.EnvVar{{Name: "INIT_MODE", Value: "fast"}},
		agent: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
	}
	cases := []struct {
		name    string
		spec    func() corev1.PodSpec
		env     []ev
		policy  extensionsv1beta1.EnvVarsInjectionPolicy
		open    []string // the template's envVarsInjectionContainers
		want    want
		wantErr []string // substrings of the error; nil for success
	}{
		{
			name: "Disallowed refuses any variable", env: []ev{{Name: "A", Value: "1"}}, policy: disallowed,
			wantErr: []string{"not allowed by the template policy", "Disallowed"},
		},
		{
			name: "an unset policy refuses like Disallowed", env: []ev{{Name: "A", Value: "1"}}, policy: "",
			wantErr: []string{"not allowed by the template policy"},
		},
		{
			name: "Allowed appends a new variable to the first regular container", env: []ev{{Name: "A", Value: "1"}}, policy: allowed,
			want: want{setup: unchanged.setup, agent: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "A", Value: "1"}}},
		},
		{
			name: "Allowed refuses a name the template sets", env: []ev{{Name: "LOG_LEVEL", Value: "debug"}}, policy: allowed,
			wantErr: []string{`"LOG_LEVEL"`, `"agent"`, "Overrides"},
		},
		{
			name: "Allowed refuses a name the named init container sets", env: []ev{{Name: "INIT_MODE", Value: "slow", ContainerName: "setup"}}, policy: allowed,
			wantErr: []string{`"INIT_MODE"`, `"setup"`},
		},
		{
			name: "Overrides replaces the template's value in place", env: []ev{{Name: "LOG_LEVEL", Value: "debug"}}, policy: overrides,
			want: want{setup: unchanged.setup, agent: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}},
		},
		{
			name: "Overrides also appends new variables", env: []ev{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "B", Value: "2"}}, policy: overrides,
			want: want{setup: unchanged.setup, agent: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "B", Value: "2"}}},
		},
		{
			name: "Overrides replaces a valueFrom variable with the plain value",
			spec: func() corev1.PodSpec {
				s := envSpec()
				s.Containers[0].Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "t"}}}}
				return s
			},
			env: []ev{{Name: "TOKEN", Value: "x"}}, policy: overrides,
			want: want{setup: unchanged.setup, agent: []corev1.EnvVar{{Name: "TOKEN", Value: "x"}}},
		},
		{
			name: "an init container the template does not open is refused", env: []ev{{Name: "A", Value: "1", ContainerName: "setup"}}, policy: allowed,
			wantErr: []string{`environment variable "A" for container "setup"`, "envVarsInjectionContainers"},
		},
		{
			name: "a sidecar the template does not open is refused", env: []ev{{Name: "A", Value: "1", ContainerName: "sidecar"}}, policy: overrides,
			wantErr: []string{`environment variable "A" for container "sidecar"`, "envVarsInjectionContainers"},
		},
		{
			name: "LD_PRELOAD under Allowed is refused", env: []ev{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}}, policy: allowed,
			wantErr: []string{`"LD_PRELOAD"`, "loader or interpreter variable", "Overrides"},
		},
		{
			name: "JAVA_TOOL_OPTIONS under Allowed is refused", env: []ev{{Name: "JAVA_TOOL_OPTIONS", Value: "-javaagent:/tmp/a.jar"}}, policy: allowed,
			wantErr: []string{`"JAVA_TOOL_OPTIONS"`, "loader or interpreter variable"},
		},
		{
			name: "LD_PRELOAD under Overrides is the template author's choice", env: []ev{{Name: "LD_PRELOAD", Value: "/opt/x.so"}}, policy: overrides,
			want: want{setup: unchanged.setup, agent: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "LD_PRELOAD", Value: "/opt/x.so"}}},
		},
		{
			name: "containerName routes to an init container the template opens", env: []ev{{Name: "A", Value: "1", ContainerName: "setup"}}, policy: allowed, open: []string{"setup"},
			want: want{setup: []corev1.EnvVar{{Name: "INIT_MODE", Value: "fast"}, {Name: "A", Value: "1"}}, agent: unchanged.agent},
		},
		{
			name: "containerName routes to a regular container the template opens", env: []ev{{Name: "A", Value: "1", ContainerName: "sidecar"}}, policy: allowed, open: []string{"sidecar"},
			want: want{setup: unchanged.setup, agent: unchanged.agent, sidecar: []corev1.EnvVar{{Name: "A", Value: "1"}}},
		},
		{
			name: "containerName agent is the first regular container",
			env:  []ev{{Name: "A", Value: "1", ContainerName: "agent"}, {Name: "B", Value: "2"}}, policy: allowed,
			want: want{setup: unchanged.setup, agent: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "A", Value: "1"}, {Name: "B", Value: "2"}}},
		},
		{
			name: "variables spread over several containers in one call",
			env: []ev{
				{Name: "A", Value: "1"},
				{Name: "B", Value: "2", ContainerName: "setup"},
				{Name: "C", Value: "3", ContainerName: "sidecar"},
			},
			policy: allowed, open: []string{"sidecar", "setup"},
			want: want{
				setup:   []corev1.EnvVar{{Name: "INIT_MODE", Value: "fast"}, {Name: "B", Value: "2"}},
				agent:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "A", Value: "1"}},
				sidecar: []corev1.EnvVar{{Name: "C", Value: "3"}},
			},
		},
		{
			name: "an unknown container is an error naming the container and the variable",
			env:  []ev{{Name: "GPU_FLAGS", Value: "--mig", ContainerName: "trainer"}}, policy: allowed, open: []string{"trainer"},
			wantErr: []string{`target container "trainer" not found`, `environment variable "GPU_FLAGS"`},
		},
		{
			name: "no regular container for a variable without containerName is an error",
			spec: func() corev1.PodSpec {
				s := envSpec()
				s.Containers = nil
				return s
			},
			env: []ev{{Name: "A", Value: "1"}}, policy: allowed,
			wantErr: []string{"not found", `"A"`},
		},
		{name: "empty env with Disallowed changes nothing", env: nil, policy: disallowed, want: unchanged},
		{name: "empty env with Allowed changes nothing", env: []ev{}, policy: allowed, want: unchanged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := envSpec()
			if tc.spec != nil {
				spec = tc.spec()
			}
			before := *spec.DeepCopy()
			template := &extensionsv1beta1.SandboxTemplate{Spec: extensionsv1beta1.SandboxTemplateSpec{EnvVarsInjectionPolicy: tc.policy, EnvVarsInjectionContainers: tc.open}}
			err := InjectEnv(&spec, tc.env, template)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("InjectEnv succeeded, want an error with %q; spec %+v", tc.wantErr, spec)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				var ce *ClaimError
				if !errors.As(err, &ce) || ce.Reason != extensionsv1beta1.ClaimReasonReconcilerError || ce.Retry {
					t.Errorf("error %#v is not a non-retried ReconcilerError claimError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("InjectEnv: %v", err)
			}
			got := want{setup: spec.InitContainers[0].Env}
			if len(spec.Containers) > 0 {
				got.agent, got.sidecar = spec.Containers[0].Env, spec.Containers[1].Env
			}
			for _, c := range []struct {
				container string
				got, want []corev1.EnvVar
			}{{"setup", got.setup, tc.want.setup}, {"agent", got.agent, tc.want.agent}, {"sidecar", got.sidecar, tc.want.sidecar}} {
				if !apiequality.Semantic.DeepEqual(c.got, c.want) {
					t.Errorf("env of %s = %+v, want %+v", c.container, c.got, c.want)
				}
			}
			if len(tc.env) == 0 && !apiequality.Semantic.DeepEqual(spec, before) {
				t.Errorf("spec changed with no env: %+v", spec)
			}
		})
	}
}

func TestDesiredPodMetadata(t *testing.T) {
	identity := map[string]string{
		extensionsv1beta1.SandboxIDLabel:              string(testClaimUID),
		extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash,
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tmplLabels := with(identity, "app", "python", "tier", "sandbox")
	// current is a warm member's pod metadata: template labels plus the pool's.
	current := &agentsv1beta1.PodMetadata{
		Labels: map[string]string{
			"app": "old", "from-current": "yes",
			extensionsv1beta1.WarmPoolSandboxLabel:        poolHash,
			agentsv1beta1.SandboxPodTemplateHashLabel:     "podtmpl1",
			extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash,
		},
		Annotations: map[string]string{"note": "current"},
	}
	cases := []struct {
		name      string
		template  *extensionsv1beta1.SandboxTemplate
		current   *agentsv1beta1.PodMetadata
		labels    map[string]string
		annots    map[string]string
		want      agentsv1beta1.PodMetadata
		wantError []string
	}{
		{
			name: "template labels and annotations kept, identity labels set", template: newTemplate(),
			want: agentsv1beta1.PodMetadata{Labels: tmplLabels, Annotations: map[string]string{"team": "ml"}},
		},
		{
			name: "template wins over the current metadata", template: newTemplate(), current: current,
			want: agentsv1beta1.PodMetadata{Labels: tmplLabels, Annotations: map[string]string{"team": "ml"}},
		},
		{
			name: "warm-pool labels in the template are removed",
			template: newTemplate(func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.PodTemplate.ObjectMeta.Labels[extensionsv1beta1.WarmPoolSandboxLabel] = poolHash
				t.Spec.PodTemplate.ObjectMeta.Labels[agentsv1beta1.SandboxPodTemplateHashLabel] = "x"
			}),
			want: agentsv1beta1.PodMetadata{Labels: tmplLabels, Annotations: map[string]string{"team": "ml"}},
		},
		{
			name: "identity labels replace stale values in the template",
			template: newTemplate(func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.PodTemplate.ObjectMeta.Labels[extensionsv1beta1.SandboxIDLabel] = "someone-else"
			}),
			want: agentsv1beta1.PodMetadata{Labels: tmplLabels, Annotations: map[string]string{"team": "ml"}},
		},
		{
			name: "claim labels and annotations added", template: newTemplate(),
			labels: map[string]string{"owner": "alice"}, annots: map[string]string{"cost-center": "1234"},
			want: agentsv1beta1.PodMetadata{Labels: with(tmplLabels, "owner", "alice"), Annotations: map[string]string{"team": "ml", "cost-center": "1234"}},
		},
		{
			name: "the template's own value repeated is fine", template: newTemplate(),
			labels: map[string]string{"app": "python"}, annots: map[string]string{"team": "ml"},
			want: agentsv1beta1.PodMetadata{Labels: tmplLabels, Annotations: map[string]string{"team": "ml"}},
		},
		{
			name: "a different label value than the template's is refused", template: newTemplate(),
			labels:    map[string]string{"app": "node"},
			wantError: []string{"label", `"app"="node"`, `"python"`},
		},
		{
			name: "a different annotation value than the template's is refused", template: newTemplate(),
			annots:    map[string]string{"team": "web"},
			wantError: []string{"annotation", `"team"="web"`, `"ml"`},
		},
		{
			name: "a label in kubernetes.io is refused", template: newTemplate(),
			labels:    map[string]string{"kubernetes.io/arch": "amd64"},
			wantError: []string{"restricted domain", `"kubernetes.io/arch"`},
		},
		{
			name: "an annotation in a subdomain of k8s.io is refused", template: newTemplate(),
			annots:    map[string]string{"foo.k8s.io/x": "y"},
			wantError: []string{"restricted domain", `"foo.k8s.io/x"`},
		},
		{
			name: "the claim-uid label is refused", template: newTemplate(),
			labels:    map[string]string{extensionsv1beta1.SandboxIDLabel: "forged"},
			wantError: []string{"restricted domain", extensionsv1beta1.SandboxIDLabel},
		},
		{
			name: "the router label of the secure default is refused", template: newTemplate(func(t *extensionsv1beta1.SandboxTemplate) {
				delete(t.Spec.PodTemplate.ObjectMeta.Labels, "app")
			}),
			labels:    map[string]string{"app": "sandbox-router"},
			wantError: []string{"label", `"app"`, "NetworkPolicy admits peers"},
		},
		{
			name: "a mesh opt-out is refused", template: newTemplate(),
			annots:    map[string]string{"sidecar.istio.io/inject": "false"},
			wantError: []string{"annotation", `"sidecar.istio.io/inject"`, "sidecar"},
		},
		{
			name: "a key the template's allow list leaves out is refused", template: newTemplate(func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.AllowedClaimPodMetadata = &extensionsv1beta1.ClaimPodMetadataKeys{Labels: []string{"owner"}}
			}),
			labels: map[string]string{"owner": "alice"}, annots: map[string]string{"cost-center": "1"},
			wantError: []string{"annotation", `"cost-center"`, "allowedClaimPodMetadata"},
		},
		{
			name: "a look-alike domain is not restricted", template: newTemplate(),
			labels: map[string]string{"notk8s.io/x": "y"},
			want:   agentsv1beta1.PodMetadata{Labels: with(tmplLabels, "notk8s.io/x", "y"), Annotations: map[string]string{"team": "ml"}},
		},
		{
			name: "template missing: based on the current metadata minus warm-pool labels", current: current,
			labels: map[string]string{"owner": "alice"},
			want: agentsv1beta1.PodMetadata{
				Labels:      with(identity, "app", "old", "from-current", "yes", "owner", "alice"),
				Annotations: map[string]string{"note": "current"},
			},
		},
		{
			name: "template missing: a value conflicting with the current metadata is refused", current: current,
			labels:    map[string]string{"app": "new"},
			wantError: []string{`"app"="new"`, `"old"`},
		},
		{
			name: "neither template nor current: identity labels only",
			want: agentsv1beta1.PodMetadata{Labels: identity},
		},
		{
			name: "a template without metadata gets identity labels and no annotations",
			template: newTemplate(func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.PodTemplate.ObjectMeta = agentsv1beta1.PodMetadata{}
			}),
			want: agentsv1beta1.PodMetadata{Labels: identity},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := newClaim(withExtraMeta(tc.labels, tc.annots))
			var tmplBefore *extensionsv1beta1.SandboxTemplate
			if tc.template != nil {
				tmplBefore = tc.template.DeepCopy()
			}
			var curBefore *agentsv1beta1.PodMetadata
			if tc.current != nil {
				curBefore = tc.current.DeepCopy()
			}
			got, err := DesiredPodMetadata(claim, tc.template, tc.current)
			if tc.wantError != nil {
				if err == nil {
					t.Fatalf("DesiredPodMetadata = %+v, want an error", got)
				}
				var ce *ClaimError
				if !errors.As(err, &ce) || ce.Reason != extensionsv1beta1.ClaimReasonInvalidMetadata || ce.Retry {
					t.Errorf("error %#v is not a non-retried InvalidMetadata claimError", err)
				}
				for _, s := range tc.wantError {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
			} else {
				if err != nil {
					t.Fatalf("DesiredPodMetadata: %v", err)
				}
				if !apiequality.Semantic.DeepEqual(got, tc.want) {
					t.Errorf("DesiredPodMetadata =\n  %+v\nwant\n  %+v", got, tc.want)
				}
			}
			if tc.template != nil && !apiequality.Semantic.DeepEqual(tc.template, tmplBefore) {
				t.Errorf("the template was modified: %+v", tc.template.Spec.PodTemplate.ObjectMeta)
			}
			if tc.current != nil && !apiequality.Semantic.DeepEqual(tc.current, curBefore) {
				t.Errorf("the current metadata was modified: %+v", tc.current)
			}
		})
	}
}
