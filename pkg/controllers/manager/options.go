// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package manager runs the embedded controllers: it builds the clients and informers, holds the
// leader-election lease and starts the controllers enabled by --controllers while it leads.
package manager

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/component-base/config/options"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
)

// KnownControllers are the names --controllers accepts.
var KnownControllers = controllers.All

// Options configure the embedded controllers.
type Options struct {
	// Controllers lists the controllers to run: "*" for all, "name" to enable, "-name" to disable.
	Controllers []string
	// Extensions runs the controllers of the extensions group (claims, templates, warm pools) among
	// those Controllers enables; false runs the core ones only, as the seeds' controller does
	// without --extensions.
	Extensions bool
	// SandboxWorkers, ClaimWorkers, WarmPoolWorkers and TemplateWorkers are the numbers of objects
	// of each kind reconciled at once.
	SandboxWorkers  int
	ClaimWorkers    int
	WarmPoolWorkers int
	TemplateWorkers int
	// WarmPoolMaxBatchSize caps the members a warm pool creates or deletes in one pass.
	WarmPoolMaxBatchSize int
	// KubeAPIQPS and KubeAPIBurst limit the controllers' requests to the cluster's kube-apiserver;
	// a negative QPS sets no client-side limit.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// ClusterDomain is the DNS domain of the cluster, for status.serviceFQDN.
	ClusterDomain string
	// LeaderElection makes only one replica run the controllers.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// LeaderElectionNamespace, when set, is the namespace of the Lease (the seeds' name for
	// LeaderElection.ResourceNamespace).
	LeaderElectionNamespace string
	// ServerPodNamespace and ServerPodLabels find the API server's own pods, which the secure
	// default NetworkPolicy of a template admits so that sandboxes/proxy reaches the sandboxes.
	ServerPodNamespace string
	ServerPodLabels    map[string]string
	// ClusterCIDRs are the cluster's pod and service ranges, which the secure default
	// NetworkPolicy's egress excludes besides the private, shared and link-local ranges.
	ClusterCIDRs []string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Controllers: []string{"*"},
		Extensions:  true,
		// Most sandbox syncs are follow-ups nobody waits on (a claimed pod's relabel, a status
		// write) or pod creates the main API serializes anyway. More workers only make them
		// compete for CPU with the requests users wait on: on the 2-core benchmark machine 32
		// workers gave a warm stream's claims a p99 of 650-740 ms and 8 gave 270-280 ms, with the
		// same cold start of 500 sandboxes (8.0 s).
		SandboxWorkers: 8,
		// A claim's sync is two writes in a row (adopt, then status) and waits on them; with 32
		// workers a burst of 300 claims queued 0.5 s on average behind them, with 128 only 14 ms.
		ClaimWorkers:         128,
		WarmPoolWorkers:      4,
		TemplateWorkers:      2,
		WarmPoolMaxBatchSize: 300,
		KubeAPIQPS:           200,
		KubeAPIBurst:         400,
		ClusterDomain:        "cluster.local",
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      "leases",
			ResourceName:      "sandbox-apiserver-controllers",
			ResourceNamespace: "kube-system",
		},
	}
}

// AddFlags adds the controller flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf(
		"Controllers to run: '*' for all, 'name' to enable one, '-name' to disable one. Known: %s. An empty list serves the API only.",
		strings.Join(KnownControllers, ", ")))
	fs.IntVar(&o.SandboxWorkers, "sandbox-concurrent-workers", o.SandboxWorkers, "Number of Sandboxes reconciled at once.")
	fs.IntVar(&o.ClaimWorkers, "sandbox-claim-concurrent-workers", o.ClaimWorkers, "Number of SandboxClaims reconciled at once.")
	fs.IntVar(&o.WarmPoolWorkers, "sandbox-warm-pool-concurrent-workers", o.WarmPoolWorkers, "Number of SandboxWarmPools reconciled at once.")
	fs.IntVar(&o.TemplateWorkers, "sandbox-template-concurrent-workers", o.TemplateWorkers, "Number of SandboxTemplates reconciled at once.")
	fs.IntVar(&o.WarmPoolMaxBatchSize, "sandbox-warm-pool-max-batch-size", o.WarmPoolMaxBatchSize, "Most warm pool members created or deleted in one pass of a pool.")
	fs.BoolVar(&o.Extensions, "extensions", o.Extensions,
		"Run the controllers of SandboxClaims, SandboxTemplates and SandboxWarmPools (among those --controllers enables). False runs only the core controllers; the API of every kind is served either way.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second the controllers may send to the cluster's kube-apiserver; negative for no client-side limit.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests the controllers may send to the cluster's kube-apiserver.")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "DNS domain of the cluster, used in status.serviceFQDN.")
	options.BindLeaderElectionFlags(&o.LeaderElection, fs)
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader-election Lease; when empty, --leader-elect-resource-namespace.")
	fs.StringVar(&o.ServerPodNamespace, "server-pod-namespace", o.ServerPodNamespace,
		"Namespace of this server's own pods (set it from the downward API). With --server-pod-labels, the secure default NetworkPolicy of every template admits ingress from those pods, so that sandboxes/proxy reaches the sandboxes.")
	fs.StringToStringVar(&o.ServerPodLabels, "server-pod-labels", o.ServerPodLabels,
		"Labels that select this server's own pods in --server-pod-namespace, as key=value pairs.")
	fs.StringSliceVar(&o.ClusterCIDRs, "cluster-cidrs", o.ClusterCIDRs,
		"The cluster's pod and service CIDRs (IPv4 or IPv6, comma-separated). The secure default NetworkPolicy of every template closes egress to them, besides the private (RFC 1918), shared (100.64.0.0/10), link-local and IPv6 unique and link-local ranges it always closes. Name them when they lie outside those ranges.")
}

// ServerPeer is the NetworkPolicy peer of the server's own pods; nil unless both
// --server-pod-namespace and --server-pod-labels are set.
func (o *Options) ServerPeer() *networkingv1.NetworkPolicyPeer {
	if o.ServerPodNamespace == "" || len(o.ServerPodLabels) == 0 {
		return nil
	}
	return &networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: o.ServerPodNamespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(o.ServerPodLabels)},
	}
}

// LeaseNamespace is the namespace of the controllers' Lease.
func (o *Options) LeaseNamespace() string {
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace
	}
	return o.LeaderElection.ResourceNamespace
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	var errs []error
	for _, c := range o.Controllers {
		name := strings.TrimPrefix(c, "-")
		if c != "*" && !slices.Contains(KnownControllers, name) {
			errs = append(errs, fmt.Errorf("--controllers: unknown controller %q (known: %s)", c, strings.Join(KnownControllers, ", ")))
		}
	}
	if min(o.SandboxWorkers, o.ClaimWorkers, o.WarmPoolWorkers, o.TemplateWorkers) < 1 {
		errs = append(errs, fmt.Errorf("every --*-concurrent-workers flag must be at least 1"))
	}
	if o.WarmPoolMaxBatchSize < 1 {
		errs = append(errs, fmt.Errorf("--sandbox-warm-pool-max-batch-size must be at least 1"))
	}
	if o.KubeAPIQPS == 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive, or negative for no client-side limit"))
	}
	if o.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be positive"))
	}
	if (o.ServerPodNamespace == "") != (len(o.ServerPodLabels) == 0) {
		errs = append(errs, fmt.Errorf("--server-pod-namespace and --server-pod-labels go together: set both or neither"))
	}
	if o.ServerPodNamespace != "" {
		for _, msg := range validation.IsDNS1123Label(o.ServerPodNamespace) {
			errs = append(errs, fmt.Errorf("--server-pod-namespace: %s", msg))
		}
	}
	for _, c := range o.ClusterCIDRs {
		if prefix, err := netip.ParsePrefix(c); err != nil || prefix.Bits() == 0 {
			errs = append(errs, fmt.Errorf("--cluster-cidrs: %q is not a CIDR narrower than the whole address space", c))
		}
	}
	if err := metav1validation.ValidateLabels(o.ServerPodLabels, field.NewPath("--server-pod-labels")).ToAggregate(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// Enabled says whether the named controller runs.
func (o *Options) Enabled(name string) bool {
	if !o.Extensions && slices.Contains(controllers.Extensions, name) {
		return false
	}
	enabled := false
	for _, c := range o.Controllers {
		switch c {
		case "*":
			enabled = true
		case name:
			return true
		case "-" + name:
			return false
		}
	}
	return enabled
}

// Any says whether at least one controller runs.
func (o *Options) Any() bool {
	return slices.ContainsFunc(KnownControllers, o.Enabled)
}
