// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// fieldManager owns what the plane applies (server-side apply).
const fieldManager = "local-up"

// requestTimeout bounds one request to kube-apiserver, as kubectl's --request-timeout=20s did.
const requestTimeout = 20 * time.Second

// cluster is the plane's kube-apiserver, as the admin (system:masters) reaches it.
type cluster struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// newCluster connects with the admin kubeconfig.
func newCluster(kubeconfig string) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = requestTimeout
	cfg.QPS, cfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{kube: kube, dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// decodeManifests splits a YAML stream into its objects (empty documents skipped).
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("a document without kind or metadata.name: %v", obj)
		}
		out = append(out, u)
	}
}

// resource finds where obj's kind is served; a kind kube-apiserver does not know yet (a
// CustomResourceDefinition applied just before) is looked up again after discovery is refreshed.
func (c *cluster) resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	err := poll(ctx, time.Second, 30*time.Second, func() (bool, error) {
		var err error
		mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			c.mapper.Reset()
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		return c.dynamic.Resource(mapping.Resource).Namespace(ns), mapping, nil
	}
	return c.dynamic.Resource(mapping.Resource), mapping, nil
}

// apply applies obj server-side, taking over fields another manager set. With subresource
// "status", it applies the object's status.
func (c *cluster) apply(ctx context.Context, obj *unstructured.Unstructured, subresource ...string) error {
	res, mapping, err := c.resource(ctx, obj)
	if err != nil {
		return err
	}
	name := strings.ToLower(obj.GetKind())
	if g := mapping.Resource.Group; g != "" {
		name += "." + g
	}
	name += "/" + obj.GetName()
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	if _, err := res.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: fieldManager, Force: &force}, subresource...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// applyAll applies every object of a YAML stream, in order.
func (c *cluster) applyAll(ctx context.Context, data []byte, subresource ...string) error {
	objs, err := decodeManifests(data)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := c.apply(ctx, obj, subresource...); err != nil {
			return err
		}
	}
	return nil
}

// poll calls cond every interval until it is done, fails, or timeout passes (an error saying
// so). cond runs at once first.
func poll(ctx context.Context, interval, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("not done after %s: %w", timeout, errTimeout)
		case <-t.C:
		}
	}
}

// errTimeout is poll's error when its time is up.
var errTimeout = errors.New("timed out")

func errorsIsTimeout(err error) bool { return errors.Is(err, errTimeout) }
