// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// An InformerSource gives the controllers' informers this server's own kinds straight from its
// registries: their lists and watches are served by the registries' watch caches inside the
// process, not over the loopback HTTPS connection. No object is encoded, encrypted, decrypted
// and decoded again on its way to a controller, and the objects the informers keep share their
// contents (maps, slices, strings, the pod spec) with the objects the watch caches keep instead
// of being a second decoded copy of each.
//
// Those objects are read-only, as every informer's are: the watch caches serve them to every
// client. Each informer object is a struct of its own, so a transform may set its top-level
// fields (drop its managedFields), but nothing may write into what it points to.

package fastpath

import (
	"context"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
	agentsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/agents"
	extensionsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/internalinterfaces"
)

// RegistryStores are the registries of the four kinds, as the server installs them.
type RegistryStores struct {
	Sandboxes, Claims, Templates, WarmPools *genericregistry.Store
}

// InformerSource lists and watches the four kinds from their registries, in their v1beta1 form.
type InformerSource struct {
	scheme *runtime.Scheme
	kinds  []kind
}

// kind is one registry and the v1beta1 types its informer keeps.
type kind struct {
	store     func() *genericregistry.Store
	newObject func() runtime.Object
	newList   func() runtime.Object
}

// NewInformerSource returns an InformerSource over stores; scheme converts their internal objects to
// v1beta1. A store is read when an informer of its kind first lists, so informers may be made
// before every registry is: one that serves claims may need the informers of the others.
func NewInformerSource(scheme *runtime.Scheme, stores *RegistryStores) *InformerSource {
	return &InformerSource{scheme: scheme, kinds: []kind{
		{func() *genericregistry.Store { return stores.Sandboxes },
			func() runtime.Object { return &agentsv1beta1.Sandbox{} }, func() runtime.Object { return &agentsv1beta1.SandboxList{} }},
		{func() *genericregistry.Store { return stores.Claims },
			func() runtime.Object { return &extensionsv1beta1.SandboxClaim{} }, func() runtime.Object { return &extensionsv1beta1.SandboxClaimList{} }},
		{func() *genericregistry.Store { return stores.Templates },
			func() runtime.Object { return &extensionsv1beta1.SandboxTemplate{} }, func() runtime.Object { return &extensionsv1beta1.SandboxTemplateList{} }},
		{func() *genericregistry.Store { return stores.WarmPools },
			func() runtime.Object { return &extensionsv1beta1.SandboxWarmPool{} }, func() runtime.Object { return &extensionsv1beta1.SandboxWarmPoolList{} }},
	}}
}

// InformerFactory returns an informer factory on client whose informers of the four kinds (in
// v1beta1) list and watch in process, with tweak (when not nil) applied to their list options;
// transform (when not nil) is every informer's. Its other informers are client's, as
// externalversions makes them. Informers are made when asked for, as by any factory.
func (s *InformerSource) InformerFactory(client versioned.Interface, transform cache.TransformFunc, tweak func(*metav1.ListOptions)) externalversions.SharedInformerFactory {
	opts := []externalversions.SharedInformerOption{externalversions.WithTransform(transform)}
	if tweak != nil {
		opts = append(opts, externalversions.WithTweakListOptions(tweak))
	}
	return &informerFactory{SharedInformerFactory: externalversions.NewSharedInformerFactoryWithOptions(client, 0, opts...), source: s, tweak: tweak}
}

// informerFactory is a generated factory whose typed informers of our kinds are the InformerSource's: the group
// accessors built here ask InformerFor, which swaps in the in-process constructor.
type informerFactory struct {
	externalversions.SharedInformerFactory
	source *InformerSource
	tweak  func(*metav1.ListOptions)
}

func (f *informerFactory) InformerFor(object runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	if lw := f.source.listerWatcher(object, f.tweak); lw != nil {
		newFunc = func(_ versioned.Interface, resync time.Duration) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, object, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
	}
	return f.SharedInformerFactory.InformerFor(object, newFunc)
}

func (f *informerFactory) Agents() agentsinformers.Interface {
	return agentsinformers.New(f, metav1.NamespaceAll, f.tweak)
}

func (f *informerFactory) Extensions() extensionsinformers.Interface {
	return extensionsinformers.New(f, metav1.NamespaceAll, f.tweak)
}

// listerWatcher lists and watches the kind of object (an object of one of the four kinds, in
// v1beta1) in every namespace; nil for any other type.
func (s *InformerSource) listerWatcher(object runtime.Object, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
	for _, k := range s.kinds {
		if reflect.TypeOf(k.newObject()) == reflect.TypeOf(object) {
			lw := &listWatcher{scheme: s.scheme, kind: k, tweak: tweak}
			return listWatch{&cache.ListWatch{ListWithContextFunc: lw.list, WatchFuncWithContext: lw.watch}}
		}
	}
	return nil
}

// listWatch is a cache.ListWatch whose informer lists, then watches from the list's
// resourceVersion. A list from the watch cache gives the stored objects themselves (shallow
// copies); the initial events of a streaming list would each be a deep copy.
type listWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list instead of streaming the list.
func (listWatch) IsWatchListSemanticsUnSupported() bool { return true }

type listWatcher struct {
	scheme *runtime.Scheme
	kind   kind
	tweak  func(*metav1.ListOptions)
}

func (lw *listWatcher) options(opts metav1.ListOptions) (*metainternalversion.ListOptions, error) {
	if lw.tweak != nil {
		lw.tweak(&opts)
	}
	internal := &metainternalversion.ListOptions{}
	if err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, internal, nil); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return internal, nil
}

func (lw *listWatcher) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	internal, err := lw.options(opts)
	if err != nil {
		return nil, err
	}
	list, err := lw.kind.store().List(genericapirequest.WithNamespace(ctx, metav1.NamespaceAll), internal)
	if err != nil {
		return nil, err
	}
	out := lw.kind.newList()
	if err := lw.scheme.Convert(list, out, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

func (lw *listWatcher) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	internal, err := lw.options(opts)
	if err != nil {
		return nil, err
	}
	w, err := lw.kind.store().Watch(genericapirequest.WithNamespace(ctx, metav1.NamespaceAll), internal)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) { return lw.convert(ctx, ev), true }), nil
}

// convert gives the informer the event's object in v1beta1.
func (lw *listWatcher) convert(ctx context.Context, ev watch.Event) watch.Event {
	if ev.Type == watch.Error {
		return ev
	}
	out := lw.kind.newObject()
	if err := lw.scheme.Convert(lw.object(ctx, ev), out, nil); err != nil {
		return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}
	}
	return watch.Event{Type: ev.Type, Object: out}
}

// object returns the event's object without copying it where it can. The watch cache hands each
// watcher an object that deep-copies itself when read (so that serializing it once serves every
// watcher); while that version is still the stored one, the stored object is taken instead, as a
// read from the watch cache gives it.
func (lw *listWatcher) object(ctx context.Context, ev watch.Event) runtime.Object {
	event, ok := ev.Object.(runtime.CacheableObject)
	if !ok {
		return ev.Object // this watcher's own already: a bookmark, or copied from the cache's history
	}
	if ev.Type != watch.Deleted {
		if stored := lw.storedVersion(ctx, ev.Object); stored != nil {
			return stored
		}
	}
	return event.GetObject()
}

// storedVersion returns the watch cache's object of obj's name if it is obj's version, else nil.
func (lw *listWatcher) storedVersion(ctx context.Context, obj runtime.Object) runtime.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	store := lw.kind.store()
	key, err := store.KeyFunc(genericapirequest.WithNamespace(ctx, m.GetNamespace()), m.GetName())
	if err != nil {
		return nil
	}
	stored := store.NewFunc()
	if err := store.Storage.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"}, stored); err != nil {
		return nil
	}
	if sm, err := meta.Accessor(stored); err != nil || sm.GetResourceVersion() != m.GetResourceVersion() {
		return nil
	}
	return stored
}
