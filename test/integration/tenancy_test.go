// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
)

// TestTrustMarksAreTheControllers: the loopback client (system:apiserver in system:masters, as
// privileged as a client gets) may not set or change the marks the controllers trust on a
// Sandbox or a claim; the controllers' own client may. Nothing refused is stored.
func TestTrustMarksAreTheControllers(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	const ns = "default"
	pool, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, newPool(ns, "pool", "tmpl", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poisoned := func(name string) *agentsv1beta1.Sandbox {
		sb := newSandbox(ns, name)
		sb.Labels[extv1beta1.WarmPoolSandboxLabel] = "0a1b2c3d"
		sb.Labels[extv1beta1.SandboxTemplateRefHashLabel] = "4e5f6a7b"
		sb.Spec.PodTemplate.ObjectMeta.Labels[extv1beta1.SandboxTemplateRefHashLabel] = "4e5f6a7b"
		sb.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: extv1beta1.SchemeGroupVersion.String(), Kind: "SandboxWarmPool", Name: pool.Name, UID: pool.UID, Controller: ptr.To(true),
		}}
		return sb
	}

	_, err = s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, poisoned("forged"), metav1.CreateOptions{})
	expectInvalid(t, err, "metadata.labels[agents.x-k8s.io/sandbox-template-ref-hash]", "metadata.labels[agents.x-k8s.io/warm-pool-sandbox]",
		"metadata.ownerReferences[0]", "spec.podTemplate.metadata.labels[agents.x-k8s.io/sandbox-template-ref-hash]")
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "forged", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused sandbox was stored: %v", err)
	}

	member, err := s.ControllerClient.AgentsV1beta1().Sandboxes(ns).Create(ctx, poisoned("member"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the controllers' create: %v", err)
	}
	// An ordinary change by anyone keeps the marks; changing or removing one is refused.
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Patch(ctx, member.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("an ordinary label change: %v", err)
	}
	_, err = s.Client.AgentsV1beta1().Sandboxes(ns).Patch(ctx, member.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"agents.x-k8s.io/warm-pool-sandbox":null}}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "metadata.labels[agents.x-k8s.io/warm-pool-sandbox]")
	_, err = s.Client.AgentsV1beta1().Sandboxes(ns).Patch(ctx, member.Name, types.MergePatchType,
		[]byte(`{"metadata":{"ownerReferences":[]}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "metadata.ownerReferences")
	if _, err := s.ControllerClient.AgentsV1beta1().Sandboxes(ns).Patch(ctx, member.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"agents.x-k8s.io/warm-pool-sandbox":null},"ownerReferences":[]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the controllers' adoption-like change: %v", err)
	}

	claim := newClaim(ns, "bound", "tmpl")
	claim.Labels = map[string]string{extv1beta1.ClaimSandboxNameLabel: "member"}
	_, err = s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
	expectInvalid(t, err, "metadata.labels[agents.x-k8s.io/sandbox-name]")
	if _, err := s.ControllerClient.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the controllers' claim: %v", err)
	}
}

// TestClaimAgainstTemplate: what a claim copies into its sandbox is refused at create, naming the
// field, unless the template opens it.
func TestClaimAgainstTemplate(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	const ns = "default"
	tmpl := newTemplate(ns, "secure")
	tmpl.Spec.EnvVarsInjectionPolicy = extv1beta1.EnvVarsInjectionPolicyAllowed
	tmpl.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox:1.36"}}
	tmpl.Spec.PodTemplate.Spec.Containers = append(tmpl.Spec.PodTemplate.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy"})
	if _, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
	create := func(name string, mutate func(*extv1beta1.SandboxClaim)) error {
		c := newClaim(ns, name, "secure")
		mutate(c)
		_, err := claims.Create(ctx, c, metav1.CreateOptions{})
		return err
	}
	expectInvalid(t, create("router", func(c *extv1beta1.SandboxClaim) {
		c.Spec.AdditionalPodMetadata = agentsv1beta1.PodMetadata{
			Labels:      map[string]string{"app": "sandbox-router", "team": "a"},
			Annotations: map[string]string{"sidecar.istio.io/inject": "false", "io.katacontainers.config.hypervisor.path": "/tmp/qemu"},
		}
	}), "spec.additionalPodMetadata.annotations[io.katacontainers.config.hypervisor.path]",
		"spec.additionalPodMetadata.annotations[sidecar.istio.io/inject]", "spec.additionalPodMetadata.labels[app]")
	expectInvalid(t, create("env", func(c *extv1beta1.SandboxClaim) {
		c.Spec.Env = []extv1beta1.EnvVar{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}, {Name: "A", ContainerName: "proxy"}, {Name: "B", ContainerName: "setup"}, {Name: "OK"}}
	}), "spec.env[0].name", "spec.env[1].containerName", "spec.env[2].containerName")
	for _, name := range []string{"router", "env"} {
		if _, err := claims.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("refused claim %s was stored: %v", name, err)
		}
	}
	if err := create("plain", func(c *extv1beta1.SandboxClaim) {
		c.Spec.AdditionalPodMetadata.Labels = map[string]string{"team": "a"}
		c.Spec.Env = []extv1beta1.EnvVar{{Name: "OK"}, {Name: "MODE2", ContainerName: "agent"}}
	}); err != nil {
		t.Fatalf("an ordinary claim: %v", err)
	}

	// The template opens the sidecar, the init container and the istio key: the same claims pass.
	opened := newTemplate(ns, "opened")
	opened.Spec = *tmpl.Spec.DeepCopy()
	opened.Spec.EnvVarsInjectionContainers = []string{"proxy", "setup"}
	opened.Spec.AllowedClaimPodMetadata = &extv1beta1.ClaimPodMetadataKeys{Labels: []string{"team"}, Annotations: []string{"sidecar.istio.io/inject"}}
	if _, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, opened, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := newClaim(ns, "opened", "opened")
	c.Spec.AdditionalPodMetadata = agentsv1beta1.PodMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"sidecar.istio.io/inject": "false"}}
	c.Spec.Env = []extv1beta1.EnvVar{{Name: "A", ContainerName: "proxy"}, {Name: "B", ContainerName: "setup"}}
	if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a claim the template opens: %v", err)
	}
	// A key the allow list leaves out is refused, also on update.
	_, err := claims.Patch(ctx, "opened", types.MergePatchType, []byte(`{"spec":{"additionalPodMetadata":{"labels":{"role":"x"}}}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "spec.additionalPodMetadata.labels[role]")
}

// TestWarmPoolReplicasBound: a pool's replicas has a maximum, through the spec and through scale.
func TestWarmPoolReplicasBound(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	const ns = "default"
	pools := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns)
	_, err := pools.Create(ctx, newPool(ns, "huge", "tmpl", validation.MaxWarmPoolReplicas+1), metav1.CreateOptions{})
	expectInvalid(t, err, "spec.replicas")
	if _, err := pools.Create(ctx, newPool(ns, "pool", "tmpl", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scale, err := pools.GetScale(ctx, "pool", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = validation.MaxWarmPoolReplicas + 1
	_, err = pools.UpdateScale(ctx, "pool", scale, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("scale beyond the maximum: want 422, got %v", err)
	}
	scale.Spec.Replicas = validation.MaxWarmPoolReplicas
	if _, err := pools.UpdateScale(ctx, "pool", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scale to the maximum: %v", err)
	}
}
