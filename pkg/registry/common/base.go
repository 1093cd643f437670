// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Strategy and REST hold what the registries of all four kinds share: the constant parts of their
// strategies and the main REST endpoint with its names and category.

package common

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Category is the kubectl category of every kind served here: `kubectl get agents`.
const Category = "agents"

// Strategy is the part of a strategy every kind shares: namespaced objects, generated names, no
// create on update, no warnings.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// Finalizer, when set, is put on every new object: the kind's controller runs in this server
	// and cleans up what the object made before letting it go. Setting it at create time saves
	// the controller a write per object.
	Finalizer string
}

// NewStrategy returns the shared strategy on the types of typer; finalizer may be empty.
func NewStrategy(typer runtime.ObjectTyper, finalizer string) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, Finalizer: finalizer}
}

// AddFinalizer puts the strategy's finalizer, if any, on a new object.
func (s Strategy) AddFinalizer(obj metav1.Object) {
	if s.Finalizer != "" && !slices.Contains(obj.GetFinalizers(), s.Finalizer) {
		obj.SetFinalizers(append(obj.GetFinalizers(), s.Finalizer))
	}
}

func (Strategy) NamespaceScoped() bool                                     { return true }
func (Strategy) Canonicalize(runtime.Object)                               {}
func (Strategy) AllowCreateOnUpdate() bool                                 { return false }
func (Strategy) AllowUnconditionalUpdate() bool                            { return true }
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// ResetFields names a top-level field (spec or status) that writes of a strategy never set, in
// every served version of group, for server-side apply.
func ResetFields(group, field string) map[fieldpath.APIVersion]*fieldpath.Set {
	set := fieldpath.NewSet(fieldpath.MakePathOrDie(field))
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(group + "/v1beta1"):  set,
		fieldpath.APIVersion(group + "/v1alpha1"): set,
	}
}

// REST is the main endpoint of a kind: its store, short names and the agents category.
type REST struct {
	*genericregistry.Store
	shortNames []string
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// NewREST serves store under the given short names.
func NewREST(store *genericregistry.Store, shortNames ...string) *REST {
	return &REST{Store: store, shortNames: shortNames}
}

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return r.shortNames }

// Categories implements rest.CategoriesProvider.
func (r *REST) Categories() []string { return []string{Category} }
