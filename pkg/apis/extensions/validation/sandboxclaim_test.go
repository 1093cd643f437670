// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// validClaim is a claim that sets every field.
func validClaim() *extensions.SandboxClaim {
	return &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-prep", Namespace: "ml-team", ResourceVersion: "1"},
		Spec: extensions.SandboxClaimSpec{
			TemplateRef: extensions.SandboxTemplateRef{Name: "jupyter-template"},
			WarmPool:    ptr.To(extensions.WarmPoolPolicyNone),
			AdditionalPodMetadata: agents.PodMetadata{
				Labels:      map[string]string{"team": "ml", "example.com/tier": "gold"},
				Annotations: map[string]string{"cost-center": "1234"},
			},
			Env: []extensions.EnvVar{
				{Name: "NOTEBOOK_DIR", Value: "/workspace"},
				{Name: "GPU_FLAGS", Value: "--mig", ContainerName: "trainer"},
			},
			Lifecycle: &extensions.Lifecycle{
				ShutdownTime:            &metav1.Time{Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)},
				TTLSecondsAfterFinished: ptr.To[int32](600),
				ShutdownPolicy:          ptr.To(extensions.ShutdownPolicyDeleteForeground),
			},
		},
	}
}

func warmPool(p string) *extensions.WarmPoolPolicy { return ptr.To(extensions.WarmPoolPolicy(p)) }

func TestValidateSandboxClaim(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *extensions.SandboxClaim)
		want   []want
	}{
		{name: "valid", mutate: func(c *extensions.SandboxClaim) {}},
		{name: "minimal", mutate: func(c *extensions.SandboxClaim) {
			c.Spec = extensions.SandboxClaimSpec{TemplateRef: c.Spec.TemplateRef, WarmPool: warmPool("default")}
		}},

		// metadata: the claim's name becomes its Sandbox's name
		{name: "name missing", mutate: func(c *extensions.SandboxClaim) { c.Name = "" },
			want: []want{required("metadata.name")}},
		{name: "name starting with a digit", mutate: func(c *extensions.SandboxClaim) { c.Name = "1claim" },
			want: []want{invalid("metadata.name")}},
		{name: "name with a dot", mutate: func(c *extensions.SandboxClaim) { c.Name = "data.prep" },
			want: []want{invalid("metadata.name")}},
		{name: "name of 64 characters", mutate: func(c *extensions.SandboxClaim) { c.Name = "c" + strings.Repeat("x", 63) },
			want: []want{invalid("metadata.name")}},

		// template reference
		{name: "template name is a subdomain", mutate: func(c *extensions.SandboxClaim) { c.Spec.TemplateRef.Name = "team.jupyter-v2" }},
		{name: "template name missing", mutate: func(c *extensions.SandboxClaim) { c.Spec.TemplateRef.Name = "" },
			want: []want{required("spec.sandboxTemplateRef.name")}},
		{name: "template name invalid", mutate: func(c *extensions.SandboxClaim) { c.Spec.TemplateRef.Name = "Jupyter_Template" },
			want: []want{invalid("spec.sandboxTemplateRef.name")}},

		// warm pool policy
		{name: "warmpool default", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env = nil; c.Spec.WarmPool = warmPool("default") }},
		{name: "warmpool unset", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env = nil; c.Spec.WarmPool = nil }},
		{name: "warmpool names a pool", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env = nil; c.Spec.WarmPool = warmPool("fast-pool") }},
		{name: "warmpool names a pool of the longest name", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Env = nil
			c.Spec.WarmPool = warmPool("p" + strings.Repeat("x", 56))
		}},
		{name: "warmpool names a pool that cannot exist (too long)", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Env = nil
			c.Spec.WarmPool = warmPool("p" + strings.Repeat("x", 57))
		}, want: []want{invalid("spec.warmpool")}},
		{name: "warmpool not a pool name", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env = nil; c.Spec.WarmPool = warmPool("Fast_Pool") },
			want: []want{invalid("spec.warmpool")}},
		{name: "warmpool empty", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env = nil; c.Spec.WarmPool = warmPool("") },
			want: []want{invalid("spec.warmpool")}},

		// env with a warm pool is the controller's to refuse (in a condition), not the API's
		{name: "env with warmpool default", mutate: func(c *extensions.SandboxClaim) { c.Spec.WarmPool = warmPool("default") }},
		{name: "env with a named warm pool", mutate: func(c *extensions.SandboxClaim) { c.Spec.WarmPool = warmPool("fast-pool") }},
		{name: "env with warmpool unset (default)", mutate: func(c *extensions.SandboxClaim) { c.Spec.WarmPool = nil }},

		// env
		{name: "env name missing", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env[0].Name = "" },
			want: []want{required("spec.env[0].name")}},
		{name: "env name invalid", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env[0].Name = "1DIR" },
			want: []want{invalid("spec.env[0].name")}},
		{name: "env container name invalid", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env[1].ContainerName = "Trainer" },
			want: []want{invalid("spec.env[1].containerName")}},
		{name: "one variable for two containers", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Env = append(c.Spec.Env, extensions.EnvVar{Name: "GPU_FLAGS", Value: "x", ContainerName: "setup"})
		}},
		{name: "one variable twice for one container", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Env = append(c.Spec.Env, extensions.EnvVar{Name: "GPU_FLAGS", Value: "x", ContainerName: "trainer"})
		}, want: []want{duplicate("spec.env[2].name")}},
		{name: "one variable twice for the default container", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Env = append(c.Spec.Env, extensions.EnvVar{Name: "NOTEBOOK_DIR", Value: "/other"})
		}, want: []want{duplicate("spec.env[2].name")}},

		// additional pod metadata
		{name: "label key invalid", mutate: func(c *extensions.SandboxClaim) { c.Spec.AdditionalPodMetadata.Labels["bad key"] = "x" },
			want: []want{invalid("spec.additionalPodMetadata.labels")}},
		{name: "label value invalid", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels["team"] = strings.Repeat("x", 64)
		},
			want: []want{invalid("spec.additionalPodMetadata.labels")}},
		{name: "annotation key invalid", mutate: func(c *extensions.SandboxClaim) { c.Spec.AdditionalPodMetadata.Annotations["a/b/c"] = "x" },
			want: []want{invalid("spec.additionalPodMetadata.annotations")}},
		{name: "label in a look-alike domain", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels["cluster.x-k8s.io/owner"] = "me"
			c.Spec.AdditionalPodMetadata.Annotations["notkubernetes.io/x"] = "y"
		}},
		{name: "label in agents.x-k8s.io", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels["agents.x-k8s.io/claim-uid"] = "forged"
		}, want: []want{forbidden("spec.additionalPodMetadata.labels[agents.x-k8s.io/claim-uid]")}},
		{name: "label in a subdomain of agents.x-k8s.io", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels["x.agents.x-k8s.io/z"] = "v"
		}, want: []want{forbidden("spec.additionalPodMetadata.labels[x.agents.x-k8s.io/z]")}},
		{name: "annotation in a subdomain of kubernetes.io", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Annotations["foo.kubernetes.io/x"] = "v"
		}, want: []want{forbidden("spec.additionalPodMetadata.annotations[foo.kubernetes.io/x]")}},
		{name: "annotation in k8s.io", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Annotations["k8s.io/y"] = "v"
		}, want: []want{forbidden("spec.additionalPodMetadata.annotations[k8s.io/y]")}},

		// lifecycle
		{name: "no lifecycle", mutate: func(c *extensions.SandboxClaim) { c.Spec.Lifecycle = nil }},
		{name: "lifecycle without policy or ttl", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle = &extensions.Lifecycle{ShutdownTime: c.Spec.Lifecycle.ShutdownTime}
		}},
		{name: "ttl 0", mutate: func(c *extensions.SandboxClaim) { c.Spec.Lifecycle.TTLSecondsAfterFinished = ptr.To[int32](0) }},
		{name: "ttl negative", mutate: func(c *extensions.SandboxClaim) { c.Spec.Lifecycle.TTLSecondsAfterFinished = ptr.To[int32](-1) },
			want: []want{invalid("spec.lifecycle.ttlSecondsAfterFinished")}},
		{name: "idleTimeout of a minute", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle.IdleTimeout = &metav1.Duration{Duration: time.Minute}
		}},
		{name: "idleTimeout of a second", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle.IdleTimeout = &metav1.Duration{Duration: time.Second}
		}, want: []want{invalid("spec.lifecycle.idleTimeout")}},
		{name: "shutdownPolicy Delete", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle.ShutdownPolicy = ptr.To(extensions.ShutdownPolicyDelete)
		}},
		{name: "shutdownPolicy Retain", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle.ShutdownPolicy = ptr.To(extensions.ShutdownPolicyRetain)
		}},
		{name: "shutdownPolicy unknown", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle.ShutdownPolicy = ptr.To(extensions.ShutdownPolicy("Orphan"))
		}, want: []want{notSupported("spec.lifecycle.shutdownPolicy")}},

		// warmPoolRef (agent-sandbox v1.0): the pool names the template, warmpool follows it
		{name: "warmPoolRef without a template: the registry fills it from the pool", mutate: func(c *extensions.SandboxClaim) {
			c.Spec = extensions.SandboxClaimSpec{WarmPoolRef: &extensions.SandboxWarmPoolRef{Name: "fast-pool"}, WarmPool: warmPool("fast-pool")}
		}},
		{name: "warmPoolRef with its template", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Env = nil
			c.Spec.WarmPoolRef = &extensions.SandboxWarmPoolRef{Name: "fast-pool"}
			c.Spec.WarmPool = warmPool("fast-pool")
		}},
		{name: "warmPoolRef with warmpool none: the pool's template, started cold", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.WarmPoolRef = &extensions.SandboxWarmPoolRef{Name: "fast-pool"}
		}},
		{name: "warmPoolRef and warmpool naming another pool", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.WarmPoolRef = &extensions.SandboxWarmPoolRef{Name: "fast-pool"}
			c.Spec.WarmPool = warmPool("slow-pool")
		}, want: []want{invalid("spec.warmpool")}},
		{name: "warmPoolRef and warmpool default (any pool)", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.WarmPoolRef = &extensions.SandboxWarmPoolRef{Name: "fast-pool"}
			c.Spec.WarmPool = warmPool("default")
		}, want: []want{invalid("spec.warmpool")}},
		{name: "warmPoolRef without a name", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.WarmPoolRef = &extensions.SandboxWarmPoolRef{}
		}, want: []want{required("spec.warmPoolRef.name")}},
		{name: "warmPoolRef with an invalid name", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.WarmPoolRef = &extensions.SandboxWarmPoolRef{Name: "Fast_Pool"}
		}, want: []want{invalid("spec.warmPoolRef.name")}},

		// volumeClaimTemplates: checked like a Sandbox's, with the claim's name as the sandbox's
		{name: "volume claim templates", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{volumeClaimTemplate("scratch")}
		}},
		{name: "volume claim templates of one name twice", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{volumeClaimTemplate("scratch"), volumeClaimTemplate("scratch")}
		}, want: []want{duplicate("spec.volumeClaimTemplates[1].metadata.name")}},
		{name: "volume claim template without access modes", mutate: func(c *extensions.SandboxClaim) {
			vct := volumeClaimTemplate("scratch")
			vct.Spec.AccessModes = nil
			c.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{vct}
		}, want: []want{required("spec.volumeClaimTemplates[0].spec.accessModes")}},

		// all errors at once
		{name: "several errors are all reported", mutate: func(c *extensions.SandboxClaim) {
			c.Name = "Data_Prep"
			c.Spec.TemplateRef.Name = ""
			c.Spec.WarmPool = warmPool("fast-pool")
			c.Spec.Env[1].Name = "NOT VALID"
			c.Spec.AdditionalPodMetadata.Labels["kubernetes.io/hostname"] = "node-1"
			c.Spec.Lifecycle.TTLSecondsAfterFinished = ptr.To[int32](-5)
			c.Spec.Lifecycle.ShutdownPolicy = ptr.To(extensions.ShutdownPolicy("Never"))
		}, want: []want{
			invalid("metadata.name"),
			required("spec.sandboxTemplateRef.name"),
			invalid("spec.env[1].name"),
			forbidden("spec.additionalPodMetadata.labels[kubernetes.io/hostname]"),
			invalid("spec.lifecycle.ttlSecondsAfterFinished"),
			notSupported("spec.lifecycle.shutdownPolicy"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaim()
			tc.mutate(c)
			expectErrors(t, ValidateSandboxClaim(c), tc.want...)
		})
	}
}

func TestValidateSandboxClaimUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *extensions.SandboxClaim)
		want   []want
	}{
		{name: "unchanged", mutate: func(c *extensions.SandboxClaim) {}},
		{name: "additional pod metadata changes", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels["team"] = "data"
			c.Spec.AdditionalPodMetadata.Annotations = nil
		}},
		{name: "lifecycle changes", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle.ShutdownTime = &metav1.Time{Time: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}
			c.Spec.Lifecycle.ShutdownPolicy = ptr.To(extensions.ShutdownPolicyRetain)
		}},
		{name: "lifecycle removed", mutate: func(c *extensions.SandboxClaim) { c.Spec.Lifecycle = nil }},
		{name: "shutdownTime set to the zero time, which reads back as unset", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Lifecycle.ShutdownTime = &metav1.Time{}
		}, want: []want{invalid("spec.lifecycle.shutdownTime")}},
		{name: "new spec is validated", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels["agents.x-k8s.io/warm-pool-sandbox"] = "x"
		}, want: []want{forbidden("spec.additionalPodMetadata.labels[agents.x-k8s.io/warm-pool-sandbox]")}},
		{name: "template changed", mutate: func(c *extensions.SandboxClaim) { c.Spec.TemplateRef.Name = "other-template" },
			want: []want{invalid("spec.sandboxTemplateRef.name")}},
		{name: "warmpool changed", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.Env = nil
			c.Spec.WarmPool = warmPool("default")
		}, want: []want{invalid("spec.warmpool"), invalid("spec.env")}},
		{name: "env value changed", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env[0].Value = "/other" },
			want: []want{invalid("spec.env")}},
		{name: "env removed", mutate: func(c *extensions.SandboxClaim) { c.Spec.Env = nil },
			want: []want{invalid("spec.env")}},
		{name: "warmPoolRef set", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.WarmPoolRef = &extensions.SandboxWarmPoolRef{Name: "fast-pool"}
		}, want: []want{invalid("spec.warmPoolRef.name")}},
		{name: "volume claim templates added", mutate: func(c *extensions.SandboxClaim) {
			c.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{volumeClaimTemplate("scratch")}
		}, want: []want{invalid("spec.volumeClaimTemplates")}},
		{name: "name changed", mutate: func(c *extensions.SandboxClaim) { c.Name = "other" },
			want: []want{invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldC := validClaim()
			newC := validClaim()
			tc.mutate(newC)
			expectErrors(t, ValidateSandboxClaimUpdate(newC, oldC), tc.want...)
		})
	}

	t.Run("unset and default warmpool are the same", func(t *testing.T) {
		oldC := validClaim()
		oldC.Spec.Env = nil
		oldC.Spec.WarmPool = nil
		newC := oldC.DeepCopy()
		newC.Spec.WarmPool = warmPool("default")
		expectErrors(t, ValidateSandboxClaimUpdate(newC, oldC))
	})
	t.Run("empty and unset env are the same", func(t *testing.T) {
		oldC := validClaim()
		oldC.Spec.Env = nil
		newC := oldC.DeepCopy()
		newC.Spec.Env = []extensions.EnvVar{}
		expectErrors(t, ValidateSandboxClaimUpdate(newC, oldC))
	})
}

func TestValidateSandboxClaimStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *extensions.SandboxClaim)
		want   []want
	}{
		{name: "ready", mutate: func(c *extensions.SandboxClaim) {
			c.Status = extensions.SandboxClaimStatus{
				Conditions:    []metav1.Condition{condition("Ready", "DependenciesReady")},
				SandboxStatus: extensions.SandboxStatus{Name: "data-prep", PodIPs: []string{"10.1.2.3"}},
			}
		}},
		{name: "adopted from a warm pool", mutate: func(c *extensions.SandboxClaim) {
			c.Status.SandboxStatus.Name = "fast-pool-x7k2p"
		}},
		{name: "spec is not looked at", mutate: func(c *extensions.SandboxClaim) { c.Spec.TemplateRef.Name = "" }},
		{name: "condition without lastTransitionTime", mutate: func(c *extensions.SandboxClaim) {
			cond := condition("Ready", "ClaimExpired")
			cond.LastTransitionTime = metav1.Time{}
			c.Status.Conditions = []metav1.Condition{cond}
		}, want: []want{required("status.conditions[0].lastTransitionTime")}},
		{name: "condition reason invalid", mutate: func(c *extensions.SandboxClaim) {
			c.Status.Conditions = []metav1.Condition{condition("Ready", "not a reason")}
		}, want: []want{invalid("status.conditions[0].reason")}},
		{name: "sandbox name invalid", mutate: func(c *extensions.SandboxClaim) { c.Status.SandboxStatus.Name = "Data_Prep" },
			want: []want{invalid("status.sandbox.name")}},
		{name: "pod IP invalid", mutate: func(c *extensions.SandboxClaim) { c.Status.SandboxStatus.PodIPs = []string{"10.1.2"} },
			want: []want{invalid("status.sandbox.podIPs[0]")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldC := validClaim()
			newC := validClaim()
			tc.mutate(newC)
			expectErrors(t, ValidateSandboxClaimStatusUpdate(newC, oldC), tc.want...)
		})
	}
}
