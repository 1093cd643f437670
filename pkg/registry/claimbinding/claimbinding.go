// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package claimbinding serves a SandboxClaim from a warm pool inside its create request: the new
// claim, already Ready, and the warm Sandbox rewritten as the claim's are stored in one etcd
// transaction. The transaction holds only if the sandbox is still at the revision the choice was
// made on and the claim's name is free, so a sandbox goes to one claim only, and a failure
// anywhere leaves either both objects written or neither: there is no half-bound state to repair,
// and no moment at which the sandbox names an owner that does not exist yet.
//
// The member is the process's warm chooser's (pkg/warm), which the claim controller adopts from
// too, and the claim and sandbox are derived as the controller derives them (pkg/adoption). The
// write is done as the generic registry would do it: the registries' own status and update
// strategies, managed fields, the storage codec and transformer, and the same etcd keys, so the
// watch caches and every reader see the two objects as if written through the API.
package claimbinding

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

// FieldManager owns, in managedFields, what binding writes: the claim's status and the adopted
// sandbox's changes. It is the claim controller's manager, whose work this is.
const FieldManager = "sandboxclaim-controller"

// maxBindAttempts bounds the commits one create request tries in each bucket (Ready, then
// starting); after that the claim is stored unserved and the claim controller goes on from there.
const maxBindAttempts = 4

// bindings counts what became of the creates a chooser was offered, and of each commit.
var bindings = metrics.NewCounterVec(&metrics.CounterOpts{
	Name: "sandbox_claim_bindings_total",
	Help: "Claims created while a chooser served, by result: bound (stored with a warm sandbox), " +
		"unbound (stored as they are: not a plain warm claim, or no member left), conflict (a " +
		"candidate taken since it was chosen; another is tried), name_taken, unbindable (the binding " +
		"failed checks; stored as they are) and error.",
	StabilityLevel: metrics.ALPHA,
}, []string{"result"})

var registerMetrics sync.Once

// Config is what a Binder needs from the server.
type Config struct {
	Scheme     *runtime.Scheme
	OptsGetter generic.RESTOptionsGetter
	// Chooser picks the warm members claims are bound to; nil binds nothing (the claim controller
	// is disabled).
	Chooser *warm.Chooser
	// SandboxKey is the sandbox registry's key function.
	SandboxKey func(ctx context.Context, name string) (string, error)
	// Controllers is the identity the binding writes as: the claim controller's work, done inside
	// a tenant's create request, may write the marks only the controllers may.
	Controllers *trust.ControllerIdentity
}

// ResetFieldsUpdateStrategy is an update strategy that names the fields its writes leave alone.
type ResetFieldsUpdateStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// Registry is what the binding writes as, from the registries once they are built: the status
// strategy of claims, the update strategy of sandboxes, and the OpenAPI models of both groups
// that their field managers are built from.
type Registry struct {
	ClaimStatus      ResetFieldsUpdateStrategy
	Sandbox          ResetFieldsUpdateStrategy
	AgentsModels     map[string]*spec.Schema
	ExtensionsModels map[string]*spec.Schema
}

// Binder stores claims bound at create time. It binds nothing without a chooser, and until
// SetRegistry has given it the registries' strategies.
type Binder struct {
	scheme      *runtime.Scheme
	etcd        *clientv3.Client
	claims      resource
	sandboxes   resource
	sandboxKey  func(ctx context.Context, name string) (string, error)
	controllers *trust.ControllerIdentity
	chooser     *warm.Chooser
	// writer is set once, by SetRegistry, after the API groups are installed.
	writer atomic.Pointer[writer]
	// intercept, when set, is called in place of each commit (InterceptCommits).
	intercept atomic.Pointer[CommitInterceptor]
}

// Adoption is what one commit writes: the claim with its status as served, the member as the
// chooser cached it, and the member rewritten as the claim's.
type Adoption struct {
	Served             *extensionsv1beta1.SandboxClaim
	Candidate, Adopted *agentsv1beta1.Sandbox
}

// CommitInterceptor is called in place of a commit, with the adoption and the commit itself.
type CommitInterceptor func(ctx context.Context, a Adoption, commit func(context.Context, Adoption) error) error

// InterceptCommits makes every commit go through intercept until restore is called. It is for
// tests that hand a commit what neither the chooser nor pkg/adoption ever would (a member changed
// since it was chosen, an invalid status, a sandbox of another namespace) to show that the
// transaction and the registries' checks refuse it on their own. The server never sets it.
func (b *Binder) InterceptCommits(intercept CommitInterceptor) (restore func()) {
	b.intercept.Store(&intercept)
	return func() { b.intercept.Store(nil) }
}

// resource is how one kind is kept in etcd.
type resource struct {
	prefix      string
	codec       runtime.Codec
	transformer value.Transformer
}

// writer is how the binding writes each kind: the registry's strategy and a field manager.
type writer struct {
	claimStatus       ResetFieldsUpdateStrategy
	sandbox           ResetFieldsUpdateStrategy
	claimStatusFields *managedfields.FieldManager
	sandboxFields     *managedfields.FieldManager
}

// New returns a Binder on the storage the registries use, with its own etcd client.
func New(c Config) (*Binder, error) {
	registerMetrics.Do(func() { legacyregistry.MustRegister(bindings) })
	claimOpts, err := c.OptsGetter.GetRESTOptions(extensions.Resource("sandboxclaims"), &extensions.SandboxClaim{})
	if err != nil {
		return nil, err
	}
	sandboxOpts, err := c.OptsGetter.GetRESTOptions(agents.Resource("sandboxes"), &agents.Sandbox{})
	if err != nil {
		return nil, err
	}
	if !slices.Equal(claimOpts.StorageConfig.Transport.ServerList, sandboxOpts.StorageConfig.Transport.ServerList) {
		// One transaction cannot span two etcd clusters (--etcd-servers-overrides).
		klog.InfoS("SandboxClaims and Sandboxes are kept in different etcd clusters: claims are not bound at create time")
		return &Binder{}, nil
	}
	client, err := newEtcdClient(claimOpts.StorageConfig.Transport)
	if err != nil {
		return nil, fmt.Errorf("etcd client for claim binding: %w", err)
	}
	return &Binder{
		scheme:      c.Scheme,
		etcd:        client,
		sandboxKey:  c.SandboxKey,
		controllers: c.Controllers,
		chooser:     c.Chooser,
		claims:      newResource(claimOpts.StorageConfig),
		sandboxes:   newResource(sandboxOpts.StorageConfig),
	}, nil
}

func newResource(c *storagebackend.ConfigForResource) resource {
	transformer := c.Transformer
	if transformer == nil {
		// What the etcd3 storage uses when no encryption is configured.
		transformer = identity.NewEncryptCheckTransformer()
	}
	return resource{prefix: c.Prefix, codec: c.Codec, transformer: transformer}
}

// newEtcdClient connects to the etcd of t as the registries' storage does.
func newEtcdClient(t storagebackend.TransportConfig) (*clientv3.Client, error) {
	cfg, err := fastpath.EtcdClientConfig(t)
	if err != nil {
		return nil, err
	}
	cfg.DialTimeout = 20 * time.Second
	return clientv3.New(cfg)
}

// SetRegistry gives the binder the registries' strategies and builds its field managers from the
// OpenAPI models of both groups, as the API handlers have them.
func (b *Binder) SetRegistry(r Registry) error {
	if b.etcd == nil {
		return nil // binds nothing
	}
	claimStatusFields, err := b.fieldManager(r.ExtensionsModels, extensionsv1beta1.SchemeGroupVersion.WithKind("SandboxClaim"), "status", r.ClaimStatus)
	if err != nil {
		return fmt.Errorf("claim status field manager: %w", err)
	}
	sandboxFields, err := b.fieldManager(r.AgentsModels, agentsv1beta1.SchemeGroupVersion.WithKind("Sandbox"), "", r.Sandbox)
	if err != nil {
		return fmt.Errorf("sandbox field manager: %w", err)
	}
	b.writer.Store(&writer{claimStatus: r.ClaimStatus, sandbox: r.Sandbox, claimStatusFields: claimStatusFields, sandboxFields: sandboxFields})
	return nil
}

func (b *Binder) fieldManager(models map[string]*spec.Schema, kind schema.GroupVersionKind, subresource string, strategy rest.ResetFieldsStrategy) (*managedfields.FieldManager, error) {
	converter, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, err
	}
	hub := schema.GroupVersion{Group: kind.Group, Version: runtime.APIVersionInternal}
	return managedfields.NewDefaultFieldManager(converter, runtime.UnsafeObjectConvertor(b.scheme), b.scheme, b.scheme, kind, hub, subresource, fieldpath.NewExcludeFilterSetMap(strategy.GetResetFields()))
}

// OneEtcd reports whether claims and sandboxes are kept in one etcd cluster: only then are claims
// bound at create time, and only then do their resourceVersions compare.
func (b *Binder) OneEtcd() bool {
	return b.etcd != nil
}

// Close closes the etcd client.
func (b *Binder) Close() error {
	if b.etcd == nil {
		return nil
	}
	return b.etcd.Close()
}

// WrapClaimStorage returns the claims' storage with creates going through the binder first.
func (b *Binder) WrapClaimStorage(s storage.Interface) storage.Interface {
	return claimStorage{Interface: s, binder: b}
}

type claimStorage struct {
	storage.Interface
	binder *Binder
}

// Create stores a new claim bound to a warm sandbox when the chooser finds one, and as it is
// otherwise.
func (s claimStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if claim, ok := obj.(*extensions.SandboxClaim); ok && ttl == 0 {
		offered, bound, err := s.binder.bind(ctx, key, claim, out)
		var unbindable *unbindableError
		switch {
		case !offered:
		case errors.As(err, &unbindable):
			klog.FromContext(ctx).Error(err, "Claim not bound at create time", "claim", klog.KObj(claim))
			bindings.WithLabelValues("unbindable").Inc()
			bound, err = false, nil
		case storage.IsExist(err):
			bindings.WithLabelValues("name_taken").Inc()
		case err != nil:
			bindings.WithLabelValues("error").Inc()
		case bound:
			bindings.WithLabelValues("bound").Inc()
		default:
			bindings.WithLabelValues("unbound").Inc()
		}
		if bound || err != nil {
			return err
		}
	}
	return s.Interface.Create(ctx, key, obj, out, ttl)
}

// unbindableError says a binding could not be prepared; the claim is then stored unbound.
type unbindableError struct{ err error }

func (e *unbindableError) Error() string { return "preparing the binding: " + e.err.Error() }
func (e *unbindableError) Unwrap() error { return e.err }

// bind offers claim the chooser's members, when the binder has a chooser (offered), and reports
// whether it was stored bound.
func (b *Binder) bind(ctx context.Context, key string, claim *extensions.SandboxClaim, out runtime.Object) (offered, bound bool, err error) {
	w := b.writer.Load()
	if b.chooser == nil || w == nil || b.etcd == nil {
		return false, false, nil
	}
	versioned := &extensionsv1beta1.SandboxClaim{}
	if err := b.scheme.Convert(claim, versioned, nil); err != nil {
		return true, false, &unbindableError{err}
	}
	commit := func(ctx context.Context, a Adoption) error {
		return b.commit(ctx, w, key, claim, a.Served, a.Candidate, a.Adopted, out)
	}
	if intercept := b.intercept.Load(); intercept != nil {
		direct := commit
		commit = func(ctx context.Context, a Adoption) error { return (*intercept)(ctx, a, direct) }
	}
	bound, err = b.bindWith(ctx, versioned, func(ctx context.Context, served *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) error {
		err := commit(ctx, Adoption{Served: served, Candidate: candidate, Adopted: adopted})
		if apierrors.IsConflict(err) {
			bindings.WithLabelValues("conflict").Inc()
		}
		return err
	})
	return true, bound, err
}

// commitFunc stores claim, with its status and label as served, and the candidate rewritten as
// adopted, atomically; it answers a Conflict when the candidate is no longer the version cached.
// It only reads candidate, which is a cached object.
type commitFunc func(ctx context.Context, served *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) error

// bindWith serves a claim being created from a warm pool, so that it is stored already adopting
// its sandbox and Ready: one write and no round trip through the claim controller's queue. It
// takes the chooser's candidates as the controller's adoption does and hands commit the claim
// with its status, the candidate as cached and the candidate rewritten as the claim's; on a
// Conflict the next candidate is tried.
//
// It reports false, storing nothing, when the claim is not a plain warm claim (no pool allowed,
// env to inject, volume claim templates of its own, expired already, metadata the controller
// will refuse) or no candidate is left: the claim is then created as it is and reconciled as any
// other.
func (b *Binder) bindWith(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, commit commitFunc) (bool, error) {
	chooser := b.chooser
	start := chooser.Now()
	if !chooser.WaitSynced(ctx) {
		return false, nil
	}
	policy := adoption.WarmPoolPolicy(claim)
	if policy == extensionsv1beta1.WarmPoolPolicyNone || len(claim.Spec.VolumeClaimTemplates) > 0 {
		return false, nil
	}
	if expired, _ := adoption.TimeLeft(start, claim); expired {
		return false, nil
	}
	template, err := chooser.Templates().SandboxTemplates(claim.Namespace).Get(claim.Spec.TemplateRef.Name)
	switch {
	case apierrors.IsNotFound(err):
		template = nil
	case err != nil:
		return false, nil
	}
	if template != nil {
		if _, err := adoption.DesiredPodMetadata(claim, template, nil); err != nil {
			return false, nil
		}
		if adoption.EnvTargetsInitContainer(claim, &template.Spec.PodTemplate.Spec) {
			return false, nil
		}
	}

	// A Ready member first: the claim is stored Ready with its sandbox, and its creator has a
	// running pod when the create returns. When none is left, the oldest member still starting,
	// as the controller's adoption would give it: the claim is stored bound to it, Ready=False,
	// and the controller marks it Ready with the pod. That spares such a claim the controller's
	// adoption, label and status writes (three writes more, in a row), which a drained pool under
	// a steady stream of claims paid for every claim.
	logger := klog.FromContext(ctx)
	ctx, traceContext, span := tracecontext.Start(ctx, chooser.Tracer(), claim.Annotations, "SandboxClaim.bind")
	defer span.End()
	unmergeable := false
	try := func(key string, candidate *agentsv1beta1.Sandbox) (bool, error) {
		adopted, err := adoption.AdoptedSandbox(claim, template, candidate, traceContext)
		if err != nil {
			unmergeable = true
			return false, err
		}
		served := adoption.ServedClaim(claim, template, adopted)
		err = commit(ctx, served, candidate, adopted)
		if apierrors.IsConflict(err) {
			logger.V(4).Info("Warm candidate changed since cached", "claim", klog.KObj(claim), "sandbox", key)
			return true, nil
		}
		if err != nil {
			return false, err
		}
		chooser.RecordAdoption(served, candidate, adopted)
		if meta.IsStatusConditionTrue(served.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)) {
			warm.ObserveReady(served, adopted, start)
		}
		return false, nil
	}
	bound, err := chooser.Offer(claim, policy, maxBindAttempts, try)
	if unmergeable {
		// The claim's pod metadata does not merge with the member's: stored unbound, for the
		// controller to report.
		return false, nil
	}
	return bound, err
}

// commit writes the claim, with the status of served, and the adopted sandbox in one transaction
// conditional on the candidate's revision and the claim's absence, and decodes the stored claim
// into out.
func (b *Binder) commit(ctx context.Context, w *writer, claimKey string, created *extensions.SandboxClaim, served *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox, out runtime.Object) error {
	ctx = b.controllers.WithUser(genericapirequest.WithNamespace(ctx, created.Namespace))

	withStatus := &extensions.SandboxClaim{}
	if err := b.scheme.Convert(served, withStatus, nil); err != nil {
		return &unbindableError{err}
	}
	claim := created.DeepCopy()
	claim.Status = withStatus.Status
	// The served claim also carries the label naming its sandbox, written by the controller.
	claim.Labels = withStatus.Labels
	claimObj := w.claimStatusFields.UpdateNoErrors(created, claim, FieldManager)
	// The status strategy's checks, as for a status write. They compare metadata as for a stored
	// claim, which this one is not yet: both sides get the same stand-in resourceVersion.
	w.claimStatus.PrepareForUpdate(ctx, claimObj, created)
	before, after := created.DeepCopy(), claimObj.DeepCopyObject().(*extensions.SandboxClaim)
	before.ResourceVersion, after.ResourceVersion = "1", "1"
	if errs := w.claimStatus.ValidateUpdate(ctx, after, before); len(errs) > 0 {
		return &unbindableError{apierrors.NewInvalid(extensions.Kind("SandboxClaim"), created.Name, errs)}
	}
	// A status write keeps the labels it was given; this write is also the controller's labelling,
	// checked as metadata.
	if errs := metav1validation.ValidateLabels(withStatus.Labels, field.NewPath("metadata", "labels")); len(errs) > 0 {
		return &unbindableError{apierrors.NewInvalid(extensions.Kind("SandboxClaim"), created.Name, errs)}
	}
	claimObj.(*extensions.SandboxClaim).Labels = withStatus.Labels

	oldSandbox, newSandbox := &agents.Sandbox{}, &agents.Sandbox{}
	if err := b.scheme.Convert(candidate, oldSandbox, nil); err != nil {
		return &unbindableError{err}
	}
	if err := b.scheme.Convert(adopted, newSandbox, nil); err != nil {
		return &unbindableError{err}
	}
	sandboxObj := w.sandboxFields.UpdateNoErrors(oldSandbox, newSandbox, FieldManager)
	if err := rest.BeforeUpdate(w.sandbox, ctx, sandboxObj, oldSandbox); err != nil {
		return &unbindableError{err}
	}
	carryObservedGeneration(oldSandbox, sandboxObj.(*agents.Sandbox))
	sandboxKey, err := b.sandboxKey(ctx, adopted.Name)
	if err != nil {
		return &unbindableError{err}
	}
	var revision int64
	if _, err := fmt.Sscan(candidate.ResourceVersion, &revision); err != nil || revision <= 0 {
		return &unbindableError{fmt.Errorf("sandbox %s has resourceVersion %q", candidate.Name, candidate.ResourceVersion)}
	}

	claimEtcdKey, claimData, claimStored, err := b.claims.encode(ctx, claimKey, claimObj)
	if err != nil {
		return &unbindableError{err}
	}
	sandboxEtcdKey, _, sandboxStored, err := b.sandboxes.encode(ctx, sandboxKey, sandboxObj)
	if err != nil {
		return &unbindableError{err}
	}

	resp, err := b.etcd.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(sandboxEtcdKey), "=", revision),
		clientv3.Compare(clientv3.CreateRevision(claimEtcdKey), "=", 0),
	).Then(
		clientv3.OpPut(sandboxEtcdKey, string(sandboxStored)),
		clientv3.OpPut(claimEtcdKey, string(claimStored)),
	).Else(
		clientv3.OpGet(claimEtcdKey, clientv3.WithCountOnly()),
	).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return storage.NewKeyExistsError(claimEtcdKey, 0)
		}
		return apierrors.NewConflict(agents.Resource("sandboxes"), adopted.Name, errors.New("changed since it was chosen"))
	}
	if err := runtime.DecodeInto(b.claims.codec, claimData, out); err != nil {
		return err
	}
	return storage.APIObjectVersioner{}.UpdateObject(out, uint64(resp.Header.Revision))
}

// carryObservedGeneration moves the adopted sandbox's conditions that were current for the
// candidate on to the generation the adoption gives it, so that the sandbox controller finds its
// status already written and sends no status write after each claim. Only the sandbox
// controller's own conditions are carried, and only when the adoption changed nothing in the spec
// but what those conditions do not depend on; any other spec change leaves them to the controller.
func carryObservedGeneration(candidate, adopted *agents.Sandbox) {
	if adopted.Generation == candidate.Generation || !onlyAdoptionChanges(&candidate.Spec, &adopted.Spec) {
		return
	}
	// A copy: the conditions may share their array with the candidate, a cached object.
	adopted.Status.Conditions = slices.Clone(adopted.Status.Conditions)
	for i := range adopted.Status.Conditions {
		c := &adopted.Status.Conditions[i]
		if c.ObservedGeneration == candidate.Generation && carriedConditions.Has(c.Type) {
			c.ObservedGeneration = adopted.Generation
		}
	}
}

// carriedConditions are the sandbox controller's conditions. Each is derived from the pod, the
// Service and spec.replicas (Ready, PodScheduled, Finished, Suspended), none from the pod
// template's metadata (propagated to the running pod without restarting it) or spec.idleTimeout
// (which suspends a sandbox later, through a spec change of its own). A condition written by
// anyone else may depend on anything, so it stays at the generation it was written for.
var carriedConditions = sets.New(
	string(agentsv1beta1.SandboxConditionReady),
	string(agentsv1beta1.SandboxConditionPodScheduled),
	string(agentsv1beta1.SandboxConditionFinished),
	string(agentsv1beta1.SandboxConditionSuspended),
)

// onlyAdoptionChanges reports whether two specs differ at most in what a claim's adoption sets:
// the pod template's metadata, its containers' env (given to the running pod late, never by
// making it again) and the idle timeout.
func onlyAdoptionChanges(candidate, adopted *agents.SandboxSpec) bool {
	before, after := *candidate, *adopted
	before.PodTemplate.ObjectMeta, after.PodTemplate.ObjectMeta = agents.PodMetadata{}, agents.PodMetadata{}
	before.IdleTimeout, after.IdleTimeout = nil, nil
	before.PodTemplate.Spec.Containers = withoutEnv(before.PodTemplate.Spec.Containers)
	after.PodTemplate.Spec.Containers = withoutEnv(after.PodTemplate.Spec.Containers)
	return apiequality.Semantic.DeepEqual(before, after)
}

// withoutEnv is a copy of containers without their env; the containers themselves are shared.
func withoutEnv(containers []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, len(containers))
	for i := range containers {
		out[i] = containers[i]
		out[i].Env = nil
	}
	return out
}

// encode turns a registry key and object into what the etcd3 storage would write for them: the
// etcd key, the encoded object and the bytes stored (the encoding through the transformer).
func (r resource) encode(ctx context.Context, key string, obj runtime.Object) (etcdKey string, data, stored []byte, err error) {
	etcdKey = path.Join("/", r.prefix) + "/" + strings.TrimPrefix(key, "/")
	if err := (storage.APIObjectVersioner{}).PrepareObjectForStorage(obj); err != nil {
		return "", nil, nil, err
	}
	if data, err = runtime.Encode(r.codec, obj); err != nil {
		return "", nil, nil, err
	}
	if stored, err = r.transformer.TransformToStorage(ctx, data, value.DefaultContext(etcdKey)); err != nil {
		return "", nil, nil, err
	}
	return etcdKey, data, stored, nil
}
