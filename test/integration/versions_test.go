// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	agentsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// convertJSON fills out from in through JSON: v1alpha1 and v1beta1 have the same shape, so one
// fixture serves both versions.
func convertJSON(t *testing.T, in, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(jsonOf(t, in)), out); err != nil {
		t.Fatal(err)
	}
}

// withoutTypeMeta is the JSON of an object with apiVersion and kind cleared.
func withoutTypeMeta(t *testing.T, obj any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(jsonOf(t, obj)), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	return jsonOf(t, m)
}

func expectSameObject(t *testing.T, a, b any) {
	t.Helper()
	if ja, jb := withoutTypeMeta(t, a), withoutTypeMeta(t, b); ja != jb {
		t.Errorf("objects differ between versions:\n%s\n%s", ja, jb)
	}
}

// richSandbox sets every field of a Sandbox spec.
func richSandbox(ns, name string) *agentsv1beta1.Sandbox {
	sb := newSandbox(ns, name)
	sb.Annotations = map[string]string{"note": "rich"}
	sb.Spec.PodTemplate.ObjectMeta.Annotations = map[string]string{"sidecar.example.com/inject": "false"}
	sb.Spec.PodTemplate.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}}
	sb.Spec.VolumeClaimTemplates = []agentsv1beta1.PersistentVolumeClaimTemplate{{
		EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: "workspace", Labels: map[string]string{"disk": "fast"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	sb.Spec.ShutdownTime = &metav1.Time{Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}
	sb.Spec.ShutdownPolicy = ptr.To(agentsv1beta1.ShutdownPolicyDelete)
	sb.Spec.Replicas = ptr.To[int32](0)
	sb.Spec.Service = ptr.To(true)
	return sb
}

// TestVersions writes objects in one served version and reads them in the other.
func TestVersions(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "versions"

	t.Run("Sandbox v1alpha1 to v1beta1", func(t *testing.T) {
		ctx := testContext(t)
		var alpha agentsv1alpha1.Sandbox
		convertJSON(t, richSandbox(ns, "from-alpha"), &alpha)
		created, err := s.Client.AgentsV1alpha1().Sandboxes(ns).Create(ctx, &alpha, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Give it a status as well, written in v1alpha1.
		created.Status.Replicas = 1
		created.Status.PodIPs = []string{"10.1.2.3", "fd00::3"}
		created.Status.Conditions = []metav1.Condition{readyCondition(metav1.ConditionTrue, "DependenciesReady")}
		withStatus, err := s.Client.AgentsV1alpha1().Sandboxes(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		beta, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "from-alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, withStatus, beta)
		if beta.Spec.ShutdownPolicy == nil || *beta.Spec.ShutdownPolicy != agentsv1beta1.ShutdownPolicyDelete || len(beta.Spec.VolumeClaimTemplates) != 1 {
			t.Errorf("fields lost in conversion: %s", jsonOf(t, beta.Spec))
		}
	})

	t.Run("Sandbox v1beta1 to v1alpha1", func(t *testing.T) {
		ctx := testContext(t)
		created, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, richSandbox(ns, "from-beta"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alpha, err := s.Client.AgentsV1alpha1().Sandboxes(ns).Get(ctx, "from-beta", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, created, alpha)

		// An update through v1alpha1 keeps everything it does not change.
		alpha.Spec.Service = ptr.To(false)
		updated, err := s.Client.AgentsV1alpha1().Sandboxes(ns).Update(ctx, alpha, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		beta, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "from-beta", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, updated, beta)

		// The wire form of each version names its version.
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			raw, err := s.Client.AgentsV1beta1().RESTClient().Get().AbsPath("/apis/agents.x-k8s.io", version, "namespaces", ns, "sandboxes", "from-beta").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var tm metav1.TypeMeta
			if err := json.Unmarshal(raw, &tm); err != nil {
				t.Fatal(err)
			}
			if tm.APIVersion != "agents.x-k8s.io/"+version || tm.Kind != "Sandbox" {
				t.Errorf("GET in %s answered %s %s", version, tm.APIVersion, tm.Kind)
			}
		}
	})

	claim := func(name string) *extv1beta1.SandboxClaim {
		c := newClaim(ns, name, "tmpl")
		c.Spec.WarmPool = ptr.To(extv1beta1.WarmPoolPolicyNone)
		c.Spec.AdditionalPodMetadata = agentsv1beta1.PodMetadata{Labels: map[string]string{"team": "ml"}, Annotations: map[string]string{"cost": "1"}}
		c.Spec.Env = []extv1beta1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2", ContainerName: "agent"}}
		c.Spec.Lifecycle = &extv1beta1.Lifecycle{
			ShutdownTime:            &metav1.Time{Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)},
			TTLSecondsAfterFinished: ptr.To[int32](60),
			ShutdownPolicy:          ptr.To(extv1beta1.ShutdownPolicyDeleteForeground),
		}
		return c
	}

	t.Run("SandboxClaim v1alpha1 to v1beta1", func(t *testing.T) {
		ctx := testContext(t)
		var alpha extv1alpha1.SandboxClaim
		convertJSON(t, claim("from-alpha"), &alpha)
		created, err := s.Client.ExtensionsV1alpha1().SandboxClaims(ns).Create(ctx, &alpha, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.SandboxStatus = extv1alpha1.SandboxStatus{Name: "from-alpha", PodIPs: []string{"10.0.0.1"}}
		withStatus, err := s.Client.ExtensionsV1alpha1().SandboxClaims(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		beta, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "from-alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, withStatus, beta)
		if len(beta.Spec.Env) != 2 || beta.Status.SandboxStatus.Name != "from-alpha" {
			t.Errorf("fields lost in conversion: %s", jsonOf(t, beta))
		}
	})

	t.Run("SandboxClaim v1beta1 to v1alpha1", func(t *testing.T) {
		ctx := testContext(t)
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, claim("from-beta"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alpha, err := s.Client.ExtensionsV1alpha1().SandboxClaims(ns).Get(ctx, "from-beta", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, created, alpha)
	})

	t.Run("SandboxTemplate both ways", func(t *testing.T) {
		ctx := testContext(t)
		tmpl := newTemplate(ns, "from-beta")
		tmpl.Spec.Service = ptr.To(true)
		tmpl.Spec.EnvVarsInjectionPolicy = extv1beta1.EnvVarsInjectionPolicyOverrides
		tcp := corev1.ProtocolTCP
		tmpl.Spec.NetworkPolicy = &extv1beta1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "router"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(8888))}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}}},
			}},
		}
		created, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alpha, err := s.Client.ExtensionsV1alpha1().SandboxTemplates(ns).Get(ctx, "from-beta", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, created, alpha)

		var alphaIn extv1alpha1.SandboxTemplate
		convertJSON(t, tmpl, &alphaIn)
		alphaIn.Name = "from-alpha"
		createdAlpha, err := s.Client.ExtensionsV1alpha1().SandboxTemplates(ns).Create(ctx, &alphaIn, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		beta, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Get(ctx, "from-alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, createdAlpha, beta)
	})

	t.Run("SandboxWarmPool both ways", func(t *testing.T) {
		ctx := testContext(t)
		pool := newPool(ns, "from-beta", "tmpl", 3)
		pool.Spec.UpdateStrategy = &extv1beta1.SandboxWarmPoolUpdateStrategy{Type: extv1beta1.RecreateSandboxWarmPoolUpdateStrategyType}
		created, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, pool, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alpha, err := s.Client.ExtensionsV1alpha1().SandboxWarmPools(ns).Get(ctx, "from-beta", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectSameObject(t, created, alpha)

		sc, err := s.Client.ExtensionsV1alpha1().SandboxWarmPools(ns).GetScale(ctx, "from-beta", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Replicas != 3 {
			t.Errorf("v1alpha1 scale spec.replicas %d, want 3", sc.Spec.Replicas)
		}
	})
}
