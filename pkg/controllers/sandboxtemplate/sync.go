// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxtemplate

import (
	"context"
	"maps"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// SandboxRouterSelector selects the pods the secure default policy lets traffic in from; claims
// may not put its keys on their pods (see the extensions validation).
var SandboxRouterSelector = validation.DefaultPolicyPeerLabels

// Egress of the secure default policy: the internet, without private (RFC 1918), shared (RFC
// 6598, the pod range of several managed clusters), link-local (cloud metadata servers) and IPv6
// unique and link-local addresses, nor the cluster's own pod and service ranges when the operator
// names them (--cluster-cidrs). Cluster DNS is blocked with them; sandboxes of such templates
// resolve through public resolvers (controllers.ApplySecureDefaults).
var (
	DefaultEgressIPv4Except = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"}
	DefaultEgressIPv6Except = []string{"fc00::/7", "fe80::/10"}
)

// egressExcept is what the secure default keeps closed in one family: the default ranges and
// those of clusterCIDRs of that family that they do not already cover.
func egressExcept(defaults []string, clusterCIDRs []string, ipv6 bool) []string {
	except := slices.Clone(defaults)
	for _, c := range clusterCIDRs {
		prefix, err := netip.ParsePrefix(c)
		if err != nil || prefix.Addr().Is6() != ipv6 {
			continue // the flag is validated; another family's range goes in the other block
		}
		prefix = prefix.Masked()
		covered := slices.ContainsFunc(except, func(e string) bool {
			p := netip.MustParsePrefix(e)
			return p.Bits() <= prefix.Bits() && p.Contains(prefix.Addr())
		})
		if !covered {
			except = append(except, prefix.String())
		}
	}
	return except
}

// sync brings the NetworkPolicy of one template to what the template asks for. It is idempotent
// and writes only on drift.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	t, err := c.templates.SandboxTemplates(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone: its finalizer made us delete the policy first (or the garbage collector will).
		return nil
	}
	if err != nil {
		return err
	}
	if t.DeletionTimestamp != nil {
		return c.finalize(ctx, t)
	}
	if objectmeta.InInactiveNamespace(c.namespaces, t) {
		return nil // an earlier namespace's leftover, or its namespace is being deleted
	}
	if !slices.Contains(t.Finalizers, Finalizer) {
		// Created while this controller was off: take the finalizer now, then come back.
		return c.addFinalizer(ctx, t)
	}
	existing, err := c.policies.NetworkPolicies(namespace).Get(PolicyName(name))
	if apierrors.IsNotFound(err) {
		existing = nil
	} else if err != nil {
		return err
	}
	if t.Spec.NetworkPolicyManagement == extensionsv1beta1.NetworkPolicyManagementUnmanaged {
		return c.deletePolicy(ctx, t, existing)
	}
	return c.ensurePolicy(ctx, t, existing)
}

// DesiredPolicy is the NetworkPolicy a managed template asks for. server, when not nil, is the
// peer of the API server's own pods, which the secure default admits as it admits the router so
// that sandboxes/proxy reaches the sandboxes.
// clusterCIDRs are the cluster's pod and service ranges, which the secure default's egress also
// excludes.
func DesiredPolicy(t *extensionsv1beta1.SandboxTemplate, server *networkingv1.NetworkPolicyPeer, clusterCIDRs []string) *networkingv1.NetworkPolicy {
	hash := objectmeta.NameHash(t.Name)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PolicyName(t.Name),
			Namespace:       t.Namespace,
			Labels:          map[string]string{extensionsv1beta1.SandboxTemplateRefHashLabel: hash},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(t, templateKind)},
		},
		Spec: desiredSpec(t, hash, server, clusterCIDRs),
	}
}

// desiredSpec selects the template's pods and denies what the rules do not allow, both ways. The
// rules are the template's own or, when it has none, the secure default. Ports get the protocol
// the cluster would default them to, so that a stored policy compares equal to its desire.
func desiredSpec(t *extensionsv1beta1.SandboxTemplate, hash string, server *networkingv1.NetworkPolicyPeer, clusterCIDRs []string) networkingv1.NetworkPolicySpec {
	spec := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{extensionsv1beta1.SandboxTemplateRefHashLabel: hash}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
	}
	if np := t.Spec.NetworkPolicy; np != nil {
		np = np.DeepCopy()
		spec.Ingress, spec.Egress = np.Ingress, np.Egress
	} else {
		from := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(SandboxRouterSelector)}}}
		if server != nil {
			from = append(from, *server.DeepCopy())
		}
		spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: from}}
		spec.Egress = []networkingv1.NetworkPolicyEgressRule{{
			To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: egressExcept(DefaultEgressIPv4Except, clusterCIDRs, false)}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: egressExcept(DefaultEgressIPv6Except, clusterCIDRs, true)}},
			},
		}}
	}
	for i := range spec.Ingress {
		defaultPorts(spec.Ingress[i].Ports)
	}
	for i := range spec.Egress {
		defaultPorts(spec.Egress[i].Ports)
	}
	return spec
}

func defaultPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			ports[i].Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
}

// ensurePolicy creates the template's policy, or repairs the one it controls. A policy of that
// name the template does not control is reported and left as it is.
func (c *Controller) ensurePolicy(ctx context.Context, t *extensionsv1beta1.SandboxTemplate, existing *networkingv1.NetworkPolicy) error {
	desired := DesiredPolicy(t, c.serverPeer, c.clusterCIDRs)
	policies := c.kube.NetworkingV1().NetworkPolicies(t.Namespace)
	if existing == nil {
		_, err := policies.Create(ctx, desired, metav1.CreateOptions{FieldManager: FieldManager})
		if err == nil {
			c.events.Eventf(t, corev1.EventTypeNormal, "NetworkPolicyCreated", "Created NetworkPolicy %s", desired.Name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			c.events.Eventf(t, corev1.EventTypeWarning, "FailedCreate", "Creating NetworkPolicy %s: %v", desired.Name, err)
			return err
		}
		// Made by an earlier attempt the cache has not seen, or by someone else without our label
		// (so outside the cache): look at it.
		if existing, err = policies.Get(ctx, desired.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}

	if objectmeta.OwnershipOf(existing, templateKind.GroupKind(), t.UID) != objectmeta.Owned {
		err := objectmeta.OwnershipConflict("NetworkPolicy", existing)
		c.events.Event(t, corev1.EventTypeWarning, "OwnershipConflict", err.Error())
		return err
	}
	if !drifted(existing, desired) {
		return nil
	}
	if existing.DeletionTimestamp != nil {
		// Being deleted by someone; its deletion event brings the template back to recreate it.
		return nil
	}
	np := existing.DeepCopy()
	np.Spec = desired.Spec
	if np.Labels == nil {
		np.Labels = map[string]string{}
	}
	maps.Copy(np.Labels, desired.Labels)
	_, err := policies.Update(ctx, np, metav1.UpdateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		// The cache is behind; the newer object (or its deletion) is on its way.
		klog.FromContext(ctx).V(4).Info("NetworkPolicy changed under us, waiting for the cache", "networkPolicy", klog.KObj(np))
		return nil
	case err != nil:
		c.events.Eventf(t, corev1.EventTypeWarning, "FailedUpdate", "Updating NetworkPolicy %s: %v", np.Name, err)
		return err
	}
	c.events.Eventf(t, corev1.EventTypeNormal, "NetworkPolicyUpdated", "Updated NetworkPolicy %s to the template's rules", np.Name)
	return nil
}

// drifted says whether the policy no longer matches the desired one: its spec or selector label.
func drifted(existing, desired *networkingv1.NetworkPolicy) bool {
	key := extensionsv1beta1.SandboxTemplateRefHashLabel
	if v, ok := existing.Labels[key]; !ok || v != desired.Labels[key] {
		return true
	}
	return !apiequality.Semantic.DeepEqual(existing.Spec, desired.Spec)
}

// deletePolicy deletes the template's policy when the template controls it, and leaves any other
// policy of that name alone.
func (c *Controller) deletePolicy(ctx context.Context, t *extensionsv1beta1.SandboxTemplate, np *networkingv1.NetworkPolicy) error {
	if np == nil || np.DeletionTimestamp != nil || objectmeta.OwnershipOf(np, templateKind.GroupKind(), t.UID) != objectmeta.Owned {
		return nil
	}
	err := c.kube.NetworkingV1().NetworkPolicies(np.Namespace).Delete(ctx, np.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &np.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		c.events.Eventf(t, corev1.EventTypeWarning, "FailedDelete", "Deleting NetworkPolicy %s: %v", np.Name, err)
		return err
	}
	c.events.Eventf(t, corev1.EventTypeNormal, "NetworkPolicyDeleted", "Deleted NetworkPolicy %s", np.Name)
	return nil
}

// addFinalizer makes a template wait for its policy to be deleted before it goes.
func (c *Controller) addFinalizer(ctx context.Context, t *extensionsv1beta1.SandboxTemplate) error {
	t = t.DeepCopy()
	t.Finalizers = append(t.Finalizers, Finalizer)
	_, err := c.client.ExtensionsV1beta1().SandboxTemplates(t.Namespace).Update(ctx, t, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// finalize deletes the policy of a deleted template, then lets the template go. It asks the
// cluster rather than the cache: a policy created a moment ago may not be cached yet, and
// releasing the template then would leave it behind.
func (c *Controller) finalize(ctx context.Context, t *extensionsv1beta1.SandboxTemplate) error {
	if !slices.Contains(t.Finalizers, Finalizer) {
		return nil
	}
	np, err := c.kube.NetworkingV1().NetworkPolicies(t.Namespace).Get(ctx, PolicyName(t.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		if err := c.deletePolicy(ctx, t, np); err != nil {
			return err
		}
	}
	t = t.DeepCopy()
	t.Finalizers = slices.DeleteFunc(t.Finalizers, func(f string) bool { return f == Finalizer })
	_, err = c.client.ExtensionsV1beta1().SandboxTemplates(t.Namespace).Update(ctx, t, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
