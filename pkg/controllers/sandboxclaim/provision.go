// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// maxAdoptionAttempts bounds how many warm candidates one sync tries before it creates a cold
// sandbox; each failed attempt means another claim took that candidate first.
const maxAdoptionAttempts = 16

// adopt hands a warm sandbox of the claim's template to the claim in one write: the Update
// carries the candidate's resourceVersion, so of all the claims (or pool deletions) racing for
// one sandbox exactly one succeeds and the others move on. The pod keeps running. A Ready member
// is taken first; when none is left, one still starting (the claim becomes Ready with its pod, as
// in the seeds), rather than a cold sandbox made beside a pool that is warming up. It returns nil
// when no candidate was left.
//
// Only the template's name is needed: without the template (deleted since) the member's own pod
// metadata is the base, as the seeds do.
func (c *Controller) adopt(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, policy extensionsv1beta1.WarmPoolPolicy, traceContext string) (*agentsv1beta1.Sandbox, error) {
	logger := klog.FromContext(ctx)
	var adopted *agentsv1beta1.Sandbox
	try := func(key string, candidate *agentsv1beta1.Sandbox) (bool, error) {
		sb, err := c.takeOver(ctx, claim, template, candidate, traceContext)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			logger.V(4).Info("Warm candidate taken by someone else", "claim", klog.KObj(claim), "sandbox", key)
			return true, nil
		}
		if err != nil {
			return false, err
		}
		c.chooser.RecordAdoption(claim, candidate, sb)
		adopted = sb
		return false, nil
	}
	_, err := c.chooser.Offer(claim, policy, maxAdoptionAttempts, try)
	return adopted, err
}

// takeOver writes the candidate over to the claim; the Update carries the candidate's
// resourceVersion.
func (c *Controller) takeOver(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, candidate *agentsv1beta1.Sandbox, traceContext string) (*agentsv1beta1.Sandbox, error) {
	sb, err := adoption.AdoptedSandbox(claim, template, candidate, traceContext)
	if err != nil {
		return nil, err
	}
	return c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Update(ctx, sb, metav1.UpdateOptions{FieldManager: FieldManager})
}

// createSandbox makes a cold sandbox named after the claim from its template, with the claim's
// pod metadata, environment variables and trace context.
func (c *Controller) createSandbox(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, traceContext string) (*agentsv1beta1.Sandbox, error) {
	sb := controllers.NewSandboxFromTemplate(template)
	adoption.SetTraceContext(sb, traceContext)
	sb.Name = claim.Name
	sb.OwnerReferences = []metav1.OwnerReference{adoption.ClaimRef(claim)}
	sb.Labels[extensionsv1beta1.SandboxIDLabel] = string(claim.UID)
	sb.Spec.IdleTimeout = adoption.IdleTimeout(claim, template, nil)
	meta, err := adoption.DesiredPodMetadata(claim, template, nil)
	if err != nil {
		return nil, err
	}
	sb.Spec.PodTemplate.ObjectMeta = meta
	if err := adoption.InjectEnv(&sb.Spec.PodTemplate.Spec, claim.Spec.Env, template); err != nil {
		return nil, err
	}
	if sb.Spec.VolumeClaimTemplates, err = adoption.MergeVolumeClaimTemplates(sb.Spec.VolumeClaimTemplates, claim, template); err != nil {
		return nil, err
	}
	created, err := c.client.AgentsV1beta1().Sandboxes(claim.Namespace).Create(ctx, sb, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		// Made by an earlier attempt the cache has not seen yet, or by someone else.
		existing, getErr := c.client.AgentsV1beta1().Sandboxes(claim.Namespace).Get(ctx, sb.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		if !objectmeta.IsControlledBy(existing, claimKind.GroupKind(), claim.UID) {
			return nil, adoption.Refused("a Sandbox named %s exists and is not controlled by this claim", sb.Name)
		}
		return existing, nil
	}
	if err != nil {
		return nil, err
	}
	c.events.Eventf(claim, corev1.EventTypeNormal, "SandboxProvisioned", "Created sandbox %s from template %s", created.Name, template.Name)
	metrics.ClaimCreations.WithLabelValues(claim.Namespace, template.Name, metrics.LaunchCold, metrics.NoWarmPool, metrics.PodNotReady).Inc()
	return created, nil
}
