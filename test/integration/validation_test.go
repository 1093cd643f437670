// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// invalidCase is one invalid object: how to create it, how to get it afterwards (which must be
// NotFound) and the fields the 422 must name.
type invalidCase struct {
	name   string
	create func(ctx context.Context) error
	get    func(ctx context.Context) error
	fields []string
}

func sandboxCase(s *framework.Server, ns, name string, mutate func(*agentsv1beta1.Sandbox), fields ...string) invalidCase {
	sb := newSandbox(ns, uniqueName("invalid-sandbox"))
	mutate(sb)
	c := s.Client.AgentsV1beta1().Sandboxes(ns)
	return invalidCase{
		name:   "Sandbox " + name,
		create: func(ctx context.Context) error { _, err := c.Create(ctx, sb, metav1.CreateOptions{}); return err },
		get:    func(ctx context.Context) error { _, err := c.Get(ctx, sb.Name, metav1.GetOptions{}); return err },
		fields: fields,
	}
}

func claimCase(s *framework.Server, ns, name string, mutate func(*extv1beta1.SandboxClaim), fields ...string) invalidCase {
	cl := newClaim(ns, uniqueName("invalid-claim"), "tmpl")
	mutate(cl)
	c := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
	return invalidCase{
		name:   "SandboxClaim " + name,
		create: func(ctx context.Context) error { _, err := c.Create(ctx, cl, metav1.CreateOptions{}); return err },
		get:    func(ctx context.Context) error { _, err := c.Get(ctx, cl.Name, metav1.GetOptions{}); return err },
		fields: fields,
	}
}

func templateCase(s *framework.Server, ns, name string, mutate func(*extv1beta1.SandboxTemplate), fields ...string) invalidCase {
	tmpl := newTemplate(ns, uniqueName("invalid-template"))
	mutate(tmpl)
	c := s.Client.ExtensionsV1beta1().SandboxTemplates(ns)
	return invalidCase{
		name:   "SandboxTemplate " + name,
		create: func(ctx context.Context) error { _, err := c.Create(ctx, tmpl, metav1.CreateOptions{}); return err },
		get:    func(ctx context.Context) error { _, err := c.Get(ctx, tmpl.Name, metav1.GetOptions{}); return err },
		fields: fields,
	}
}

func poolCase(s *framework.Server, ns, name string, mutate func(*extv1beta1.SandboxWarmPool), fields ...string) invalidCase {
	pool := newPool(ns, uniqueName("invalid-pool"), "tmpl", 1)
	mutate(pool)
	c := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns)
	return invalidCase{
		name:   "SandboxWarmPool " + name,
		create: func(ctx context.Context) error { _, err := c.Create(ctx, pool, metav1.CreateOptions{}); return err },
		get:    func(ctx context.Context) error { _, err := c.Get(ctx, pool.Name, metav1.GetOptions{}); return err },
		fields: fields,
	}
}

// invalidNames counts the objects of the invalid cases, so that each case has a name of its own
// and one wrongly accepted object cannot make the next case fail with AlreadyExists.
var invalidNames int

func uniqueName(prefix string) string {
	invalidNames++
	return fmt.Sprintf("%s-%d", prefix, invalidNames)
}

// TestValidation sends one invalid object per class of mistake and checks the 422 names the
// offending fields, that an object with several mistakes gets all of them in one answer, and that
// nothing invalid is stored.
func TestValidation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "validation"

	cases := []invalidCase{
		sandboxCase(s, ns, "without containers", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers = nil
		}, "spec.podTemplate.spec.containers"),
		sandboxCase(s, ns, "with two replicas", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.Replicas = ptr.To[int32](2)
		}, "spec.replicas"),
		sandboxCase(s, ns, "with an unknown shutdownPolicy", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.ShutdownPolicy = ptr.To(agentsv1beta1.ShutdownPolicy("Never"))
		}, "spec.shutdownPolicy"),
		sandboxCase(s, ns, "with a bad name", func(sb *agentsv1beta1.Sandbox) {
			sb.Name = "Bad_Name"
		}, "metadata.name"),
		sandboxCase(s, ns, "with a name that is no DNS-1035 label", func(sb *agentsv1beta1.Sandbox) {
			sb.Name = "1sandbox"
		}, "metadata.name"),
		sandboxCase(s, ns, "with duplicate container names", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers = append(sb.Spec.PodTemplate.Spec.Containers, corev1.Container{Name: "agent", Image: "busybox"})
		}, "spec.podTemplate.spec.containers[1].name"),
		sandboxCase(s, ns, "with a container without image", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers[0].Image = ""
		}, "spec.podTemplate.spec.containers[0].image"),
		sandboxCase(s, ns, "with a mount of an unknown volume", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nowhere", MountPath: "/x"}}
		}, "spec.podTemplate.spec.containers[0].volumeMounts[0].name"),
		sandboxCase(s, ns, "with a bad pod label", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"bad key": "x"}
		}, "spec.podTemplate.metadata.labels"),
		sandboxCase(s, ns, "with a volume claim template without access modes", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.VolumeClaimTemplates = []agentsv1beta1.PersistentVolumeClaimTemplate{{
				EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: "workspace"},
			}}
		}, "spec.volumeClaimTemplates[0].spec.accessModes", "spec.volumeClaimTemplates[0].spec.resources.requests[storage]"),

		claimCase(s, ns, "with a restricted label key", func(c *extv1beta1.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels = map[string]string{"agents.x-k8s.io/claim-uid": "forged"}
		}, "spec.additionalPodMetadata.labels[agents.x-k8s.io/claim-uid]"),
		claimCase(s, ns, "with a restricted annotation key", func(c *extv1beta1.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Annotations = map[string]string{"kubernetes.io/x": "y"}
		}, "spec.additionalPodMetadata.annotations[kubernetes.io/x]"),
		claimCase(s, ns, "with a bad env name", func(c *extv1beta1.SandboxClaim) {
			c.Spec.WarmPool = ptr.To(extv1beta1.WarmPoolPolicyNone)
			c.Spec.Env = []extv1beta1.EnvVar{{Name: "1TOKEN", Value: "x"}}
		}, "spec.env[0].name"),
		claimCase(s, ns, "with an env variable twice for one container", func(c *extv1beta1.SandboxClaim) {
			c.Spec.WarmPool = ptr.To(extv1beta1.WarmPoolPolicyNone)
			c.Spec.Env = []extv1beta1.EnvVar{{Name: "TOKEN", Value: "x"}, {Name: "TOKEN", Value: "y"}}
		}, "spec.env[1].name"),
		claimCase(s, ns, "with a negative ttlSecondsAfterFinished", func(c *extv1beta1.SandboxClaim) {
			c.Spec.Lifecycle = &extv1beta1.Lifecycle{TTLSecondsAfterFinished: ptr.To[int32](-1)}
		}, "spec.lifecycle.ttlSecondsAfterFinished"),
		claimCase(s, ns, "with an unknown shutdownPolicy", func(c *extv1beta1.SandboxClaim) {
			c.Spec.Lifecycle = &extv1beta1.Lifecycle{ShutdownPolicy: ptr.To(extv1beta1.ShutdownPolicy("Later"))}
		}, "spec.lifecycle.shutdownPolicy"),
		claimCase(s, ns, "without sandboxTemplateRef.name", func(c *extv1beta1.SandboxClaim) {
			c.Spec.TemplateRef.Name = ""
		}, "spec.sandboxTemplateRef.name"),
		claimCase(s, ns, "with a bad warmpool", func(c *extv1beta1.SandboxClaim) {
			c.Spec.WarmPool = ptr.To(extv1beta1.WarmPoolPolicy("Fast_Pool"))
		}, "spec.warmpool"),

		templateCase(s, ns, "with an unknown networkPolicyManagement", func(tm *extv1beta1.SandboxTemplate) {
			tm.Spec.NetworkPolicyManagement = "Sometimes"
		}, "spec.networkPolicyManagement"),
		templateCase(s, ns, "with an unknown envVarsInjectionPolicy", func(tm *extv1beta1.SandboxTemplate) {
			tm.Spec.EnvVarsInjectionPolicy = "Always"
		}, "spec.envVarsInjectionPolicy"),
		templateCase(s, ns, "without containers", func(tm *extv1beta1.SandboxTemplate) {
			tm.Spec.PodTemplate.Spec.Containers = nil
		}, "spec.podTemplate.spec.containers"),

		poolCase(s, ns, "with negative replicas", func(p *extv1beta1.SandboxWarmPool) {
			p.Spec.Replicas = ptr.To[int32](-1)
		}, "spec.replicas"),
		poolCase(s, ns, "without sandboxTemplateRef.name", func(p *extv1beta1.SandboxWarmPool) {
			p.Spec.TemplateRef.Name = ""
		}, "spec.sandboxTemplateRef.name"),
		poolCase(s, ns, "with an unknown updateStrategy type", func(p *extv1beta1.SandboxWarmPool) {
			p.Spec.UpdateStrategy = &extv1beta1.SandboxWarmPoolUpdateStrategy{Type: "Rolling"}
		}, "spec.updateStrategy.type"),
		poolCase(s, ns, "with a name too long for its members", func(p *extv1beta1.SandboxWarmPool) {
			p.Name = "pool-with-a-name-that-leaves-no-room-for-the-member-suffix"
		}, "metadata.name"),

		// Several mistakes at once: every one of them is in the same answer.
		sandboxCase(s, ns, "with several bad fields", func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.Replicas = ptr.To[int32](2)
			sb.Spec.ShutdownPolicy = ptr.To(agentsv1beta1.ShutdownPolicy("Never"))
			sb.Spec.PodTemplate.Spec.Containers = nil
			sb.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"bad key": "x"}
		}, "spec.replicas", "spec.shutdownPolicy", "spec.podTemplate.spec.containers", "spec.podTemplate.metadata.labels"),
		claimCase(s, ns, "with several bad fields", func(c *extv1beta1.SandboxClaim) {
			c.Spec.TemplateRef.Name = ""
			c.Spec.Env = []extv1beta1.EnvVar{{Name: "", Value: "x"}}
			c.Spec.AdditionalPodMetadata.Labels = map[string]string{"k8s.io/x": "y"}
			c.Spec.Lifecycle = &extv1beta1.Lifecycle{TTLSecondsAfterFinished: ptr.To[int32](-5)}
		}, "spec.sandboxTemplateRef.name", "spec.env[0].name", "spec.additionalPodMetadata.labels[k8s.io/x]", "spec.lifecycle.ttlSecondsAfterFinished"),
		poolCase(s, ns, "with several bad fields", func(p *extv1beta1.SandboxWarmPool) {
			p.Spec.Replicas = ptr.To[int32](-3)
			p.Spec.TemplateRef.Name = ""
			p.Spec.UpdateStrategy = &extv1beta1.SandboxWarmPoolUpdateStrategy{Type: "Rolling"}
		}, "spec.replicas", "spec.sandboxTemplateRef.name", "spec.updateStrategy.type"),
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := testContext(t)
			expectInvalid(t, c.create(ctx), c.fields...)
			if err := c.get(ctx); !apierrors.IsNotFound(err) {
				t.Errorf("the invalid object was stored: get answered %v", err)
			}
		})
	}

	// Updates are validated too, and a refused update leaves the stored object as it was.
	t.Run("Sandbox update to two replicas", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		sb, err := sandboxes.Create(ctx, newSandbox(ns, "valid"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sb.Spec.Replicas = ptr.To[int32](2)
		_, err = sandboxes.Update(ctx, sb, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.replicas")
		_, err = sandboxes.Patch(ctx, "valid", types.MergePatchType, []byte(`{"spec":{"replicas":2,"shutdownPolicy":"Never"}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec.replicas", "spec.shutdownPolicy")
		got, err := sandboxes.Get(ctx, "valid", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if int32Of(got.Spec.Replicas) != 1 || got.ResourceVersion == "" || got.Generation != 1 {
			t.Errorf("refused updates changed the Sandbox: replicas %d, generation %d", int32Of(got.Spec.Replicas), got.Generation)
		}
	})

	// env with a warm pool policy other than "none" is accepted on purpose (manifests of the seed
	// system combine them); the claim controller refuses to adopt for such a claim instead.
	t.Run("SandboxClaim with env and the default warm pool is accepted", func(t *testing.T) {
		ctx := testContext(t)
		c := newClaim(ns, "env-default-pool", "tmpl")
		c.Spec.Env = []extv1beta1.EnvVar{{Name: "TOKEN", Value: "x"}}
		got, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, c, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("claim with env and warmpool default: %v", err)
		}
		if got.Spec.WarmPool == nil || *got.Spec.WarmPool != extv1beta1.WarmPoolPolicyDefault || len(got.Spec.Env) != 1 {
			t.Errorf("stored claim: warmpool %v, env %s", got.Spec.WarmPool, jsonOf(t, got.Spec.Env))
		}
	})

	t.Run("Sandbox update of the volume claim templates", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		sb, err := sandboxes.Create(ctx, richSandbox(ns, "with-volumes"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sb.Spec.VolumeClaimTemplates[0].Labels = map[string]string{"disk": "slow"}
		_, err = sandboxes.Update(ctx, sb, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.volumeClaimTemplates")
	})

	t.Run("SandboxClaim update of an immutable field", func(t *testing.T) {
		ctx := testContext(t)
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		if _, err := claims.Create(ctx, newClaim(ns, "immutable", "tmpl"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := claims.Patch(ctx, "immutable", types.MergePatchType, []byte(`{"spec":{"sandboxTemplateRef":{"name":"other"},"warmpool":"none"}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec.sandboxTemplateRef.name", "spec.warmpool")
	})
}
