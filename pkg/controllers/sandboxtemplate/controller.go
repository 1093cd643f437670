// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxtemplate is the SandboxTemplate controller: it keeps one NetworkPolicy per
// template, <template>-network-policy, that selects the pods of every sandbox made from the
// template by the template-ref hash label. With no rules of its own a managed template gets the
// secure default policy; with rules, the template's ingress and egress wrapped in that selector;
// an unmanaged template gets none.
package sandboxtemplate

import (
	"context"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	extinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/extensions/v1beta1"
	extlisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// Name is the name of this controller in --controllers, logs and metrics.
const Name = controllers.SandboxTemplate

// FieldManager is the field manager of every write of this controller.
const FieldManager = "sandboxtemplate-controller"

// Finalizer holds a deleted SandboxTemplate until the controller has deleted its NetworkPolicy.
// The API server adds it on create when this controller runs.
const Finalizer = extensionsv1beta1.TemplateNetworkPolicyFinalizer

var templateKind = extensionsv1beta1.SchemeGroupVersion.WithKind("SandboxTemplate")

// PolicyName is the name of the NetworkPolicy of the template named template.
func PolicyName(template string) string { return template + validation.NetworkPolicySuffix }

// Controller reconciles the NetworkPolicies of SandboxTemplates.
type Controller struct {
	kube    kubernetes.Interface
	client  versioned.Interface
	loop    *controllers.WorkLoop
	synced  []cache.InformerSynced
	events  record.EventRecorder
	workers int

	templates  extlisters.SandboxTemplateLister
	policies   networkinglisters.NetworkPolicyLister
	namespaces corelisters.NamespaceLister
	serverPeer *networkingv1.NetworkPolicyPeer
	// clusterCIDRs are the cluster's pod and service ranges, closed to the secure default's egress.
	clusterCIDRs []string
}

// Config is what the controller needs from the process.
type Config struct {
	// Kube reaches the cluster, where the NetworkPolicies live.
	Kube kubernetes.Interface
	// Client reaches this server's API, where the templates live.
	Client    versioned.Interface
	Templates extinformers.SandboxTemplateInformer
	// NetworkPolicies needs to hold only the policies labelled with
	// agents.x-k8s.io/sandbox-template-ref-hash: every policy this controller writes carries it.
	NetworkPolicies networkinginformers.NetworkPolicyInformer
	// Namespaces tells a namespace being deleted, where no policy is made.
	Namespaces coreinformers.NamespaceInformer
	Events     record.EventRecorder
	Workers    int
	// ServerPeer selects the API server's own pods, which the secure default policy admits so
	// that sandboxes/proxy reaches the sandboxes; nil when the server does not know its pods.
	ServerPeer *networkingv1.NetworkPolicyPeer
	// ClusterCIDRs are the cluster's pod and service ranges (valid CIDRs), which the secure
	// default policy's egress excludes besides the private and link-local ranges.
	ClusterCIDRs []string
}

// New wires the controller to its informers.
func New(c Config) (*Controller, error) {
	ctrl := &Controller{
		kube:         c.Kube,
		client:       c.Client,
		events:       c.Events,
		workers:      max(c.Workers, 1),
		templates:    c.Templates.Lister(),
		policies:     c.NetworkPolicies.Lister(),
		namespaces:   c.Namespaces.Lister(),
		serverPeer:   c.ServerPeer,
		clusterCIDRs: slices.Clone(c.ClusterCIDRs),
	}
	ctrl.loop = controllers.NewWorkLoop(Name, ctrl.sync)
	ctrl.synced = []cache.InformerSynced{c.Templates.Informer().HasSynced, c.NetworkPolicies.Informer().HasSynced, c.Namespaces.Informer().HasSynced}
	if _, err := c.Templates.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.loop.Enqueue,
		UpdateFunc: func(_, obj any) { ctrl.loop.Enqueue(obj) },
		DeleteFunc: ctrl.loop.Enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := c.NetworkPolicies.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueueTemplate,
		UpdateFunc: func(_, obj any) { ctrl.enqueueTemplate(obj) },
		DeleteFunc: ctrl.enqueueTemplate,
	}); err != nil {
		return nil, err
	}
	return ctrl, nil
}

// Run reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.loop.Run(ctx, c.workers, c.synced...)
}

// enqueueTemplate queues the template a NetworkPolicy belongs to: its controller when that is a
// SandboxTemplate, otherwise the template its name is derived from, so an uncontrolled policy
// squatting on a template's name is looked at too.
func (c *Controller) enqueueTemplate(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	np, ok := obj.(*networkingv1.NetworkPolicy)
	if !ok {
		return
	}
	if name, ok := templateOf(np); ok {
		c.loop.Queue.Add(np.Namespace + "/" + name)
	}
}

// templateOf names the template a policy belongs to.
func templateOf(np *networkingv1.NetworkPolicy) (string, bool) {
	if metav1.GetControllerOfNoCopy(np) != nil {
		ref := objectmeta.ControllerOf(np, templateKind.GroupKind())
		if ref == nil {
			return "", false
		}
		return ref.Name, true
	}
	name, ok := strings.CutSuffix(np.Name, validation.NetworkPolicySuffix)
	return name, ok && name != ""
}
