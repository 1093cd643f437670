// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

// Sandbox is a handle on one claimed sandbox (or a Sandbox opened by its own name). Its methods
// are safe for concurrent use.
type Sandbox struct {
	client    *Client
	namespace string
	kind      Kind
	name      string
	container string // for commands, files and logs; "" for the main container

	mu          sync.Mutex
	sandboxName string            // the Sandbox's name: the claim's status.sandbox.name, or name
	annotations map[string]string // the object's, for its recorded trace context
}

func (c *Client) newSandbox(namespace string, kind Kind, name string) *Sandbox {
	sb := &Sandbox{client: c, namespace: namespace, kind: kind, name: name}
	if kind == KindSandbox {
		sb.sandboxName = name
	}
	return sb
}

// Namespace is the namespace of the claim or sandbox.
func (s *Sandbox) Namespace() string { return s.namespace }

// Name is the name of the claim (or of the Sandbox, for a handle of KindSandbox).
func (s *Sandbox) Name() string { return s.name }

// Kind says whether the handle names a claim or a sandbox.
func (s *Sandbox) Kind() Kind { return s.kind }

// SandboxName is the name of the Sandbox serving the claim, "" while it has none.
func (s *Sandbox) SandboxName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sandboxName
}

// InContainer returns a handle on the same sandbox whose commands, files and logs are those of
// the container name rather than of the main container.
func (s *Sandbox) InContainer(name string) *Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Sandbox{client: s.client, namespace: s.namespace, kind: s.kind, name: s.name, container: name,
		sandboxName: s.sandboxName, annotations: s.annotations}
}

func (s *Sandbox) String() string { return string(s.kind) + "/" + s.name }

func (s *Sandbox) recordClaim(claim *extensionsv1beta1.SandboxClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if claim.Status.SandboxStatus.Name != "" {
		s.sandboxName = claim.Status.SandboxStatus.Name
	}
	s.annotations = claim.Annotations
}

func (s *Sandbox) recordSandbox(sandbox *agentsv1beta1.Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.annotations = sandbox.Annotations
}

// refresh reads the claim or sandbox.
func (s *Sandbox) refresh(ctx context.Context) error {
	return retryOn(ctx, isTransient, func() error {
		if s.kind == KindClaim {
			claim, err := s.client.clientset.ExtensionsV1beta1().SandboxClaims(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
			if err == nil {
				s.recordClaim(claim)
			}
			return err
		}
		sandbox, err := s.client.clientset.AgentsV1beta1().Sandboxes(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
		if err == nil {
			s.recordSandbox(sandbox)
		}
		return err
	})
}

// startSpan starts an operation's span: a child of ctx's span when it has one, of the trace the
// claim recorded otherwise.
func (s *Sandbox) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := ctx
	if !trace.SpanContextFromContext(ctx).IsValid() {
		s.mu.Lock()
		parent = tracecontext.Extract(ctx, s.annotations)
		s.mu.Unlock()
	}
	attrs = append(attrs, attribute.String("k8s.namespace.name", s.namespace), attribute.String("sandbox."+string(s.kind), s.name))
	return s.client.tracer.Start(parent, name, trace.WithAttributes(attrs...))
}

// ClaimFailedError says a claim or sandbox will not become Ready without a change: its template
// is missing, it expired, its metadata was refused.
type ClaimFailedError struct {
	Object  string // sandboxclaim/NAME or sandbox/NAME
	Reason  string // the Ready condition's reason
	Message string
}

func (e *ClaimFailedError) Error() string {
	return fmt.Sprintf("%s will not become Ready: %s: %s", e.Object, e.Reason, e.Message)
}

// terminalReasons are the Ready=False reasons that no waiting cures.
var terminalReasons = map[string]bool{
	extensionsv1beta1.ClaimReasonTemplateNotFound: true,
	extensionsv1beta1.ClaimReasonInvalidMetadata:  true,
	extensionsv1beta1.ClaimReasonClaimExpired:     true,
	extensionsv1beta1.ClaimReasonSandboxExpired:   true, // also the Sandbox's own reason
}

// WaitReady waits, watching the claim (or sandbox), until it is Ready; a reason no waiting
// cures (TemplateNotFound, an expiry) is a *ClaimFailedError, and ctx bounds the wait.
func (s *Sandbox) WaitReady(ctx context.Context) (err error) {
	ctx, span := s.startSpan(ctx, "sandbox.WaitReady")
	defer func() { endSpan(span, err) }()
	return s.waitFor(ctx, 0, string(agentsv1beta1.SandboxConditionReady))
}

// waitFor watches the handle's object until its condition cond is True, at an observed
// generation of at least generation.
func (s *Sandbox) waitFor(ctx context.Context, generation int64, cond string) error {
	var lw *cache.ListWatch
	var notFound error
	if s.kind == KindClaim {
		lw = nameListWatch(s.name, s.client.clientset.ExtensionsV1beta1().SandboxClaims(s.namespace))
		notFound = apierrors.NewNotFound(extensionsv1beta1.Resource("sandboxclaims"), s.name)
	} else {
		lw = nameListWatch(s.name, s.client.clientset.AgentsV1beta1().Sandboxes(s.namespace))
		notFound = apierrors.NewNotFound(agentsv1beta1.Resource("sandboxes"), s.name)
	}
	var last *metav1.Condition
	// check says whether obj has cond True; an error ends the wait.
	check := func(evType watch.EventType, obj runtime.Object) (bool, error) {
		var conditions []metav1.Condition
		if evType == watch.Deleted {
			return false, notFound
		}
		switch o := obj.(type) {
		case *extensionsv1beta1.SandboxClaim:
			s.recordClaim(o)
			conditions = o.Status.Conditions
		case *agentsv1beta1.Sandbox:
			s.recordSandbox(o)
			conditions = o.Status.Conditions
		default:
			return false, nil
		}
		c := meta.FindStatusCondition(conditions, cond)
		if c == nil {
			return false, nil
		}
		last = c
		if c.ObservedGeneration < generation {
			return false, nil
		}
		if c.Status == metav1.ConditionTrue {
			return true, nil
		}
		if cond == string(agentsv1beta1.SandboxConditionReady) && terminalReasons[c.Reason] {
			return false, &ClaimFailedError{Object: s.String(), Reason: c.Reason, Message: c.Message}
		}
		return false, nil
	}
	err := listAndWatch(ctx, lw, notFound, check)
	if err != nil && ctx.Err() != nil && last != nil {
		return fmt.Errorf("%s is not %s (%s: %s): %w", s, cond, last.Reason, last.Message, ctx.Err())
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s is not %s: %w", s, cond, ctx.Err())
	}
	return err
}

// listAndWatch lists with lw, then watches from the list's resourceVersion, calling check on
// each object until it says done or fails; a watch that ends is started again from a new list.
// An empty list is notFound. (Not an informer: client-go's reflector would first try a
// streaming list, which not every server or fake serves.)
func listAndWatch(ctx context.Context, lw *cache.ListWatch, notFound error, check func(watch.EventType, runtime.Object) (bool, error)) error {
	for {
		var list runtime.Object
		err := retryOn(ctx, isTransient, func() error {
			var err error
			list, err = lw.ListWithContext(ctx, metav1.ListOptions{})
			return err
		})
		if err != nil {
			return err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return notFound
		}
		for _, item := range items {
			if done, err := check(watch.Modified, item); done || err != nil {
				return err
			}
		}
		listMeta, err := meta.ListAccessor(list)
		if err != nil {
			return err
		}
		w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: listMeta.GetResourceVersion(), AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		done, err := watchUntil(ctx, w, check)
		if done || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// watchUntil reads w until check says done or fails (true), or the watch ends (false: list
// again).
func watchUntil(ctx context.Context, w watch.Interface, check func(watch.EventType, runtime.Object) (bool, error)) (bool, error) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return false, nil
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			if done, err := check(ev.Type, ev.Object); done || err != nil {
				return true, err
			}
		}
	}
}

// listWatcher is the part of a typed client a ListWatch needs.
type listWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// nameListWatch lists and watches the one object name of client.
func nameListWatch[L runtime.Object](name string, client listWatcher[L]) *cache.ListWatch {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.Watch(ctx, o)
		},
	}
}

// sandboxForWrite returns the name of the Sandbox behind the handle, reading the claim when it
// is not known yet.
func (s *Sandbox) sandboxForWrite(ctx context.Context) (string, error) {
	if name := s.SandboxName(); name != "" {
		return name, nil
	}
	if err := s.refresh(ctx); err != nil {
		return "", err
	}
	if name := s.SandboxName(); name != "" {
		return name, nil
	}
	return "", fmt.Errorf("%s has no sandbox yet", s)
}

// Suspend stops the sandbox's pod, keeping its volumes, and waits until the pod is gone. It
// sets the Sandbox's spec.operatingMode to Suspended (as kubectl scale --replicas=0 does), so it
// needs the patch right on sandboxes, and get, list and watch to wait; a claim-only tenant's
// sandboxes are suspended by their idle timeout instead.
func (s *Sandbox) Suspend(ctx context.Context) (err error) {
	ctx, span := s.startSpan(ctx, "sandbox.Suspend")
	defer func() { endSpan(span, err) }()
	return s.setOperatingMode(ctx, agentsv1beta1.OperatingModeSuspended, string(agentsv1beta1.SandboxConditionSuspended))
}

// Resume starts a suspended sandbox again and waits until it is Ready. It needs the same rights
// as Suspend; a request through the proxy (HTTPClient) also wakes a suspended sandbox.
func (s *Sandbox) Resume(ctx context.Context) (err error) {
	ctx, span := s.startSpan(ctx, "sandbox.Resume")
	defer func() { endSpan(span, err) }()
	return s.setOperatingMode(ctx, agentsv1beta1.OperatingModeRunning, string(agentsv1beta1.SandboxConditionReady))
}

func (s *Sandbox) setOperatingMode(ctx context.Context, mode agentsv1beta1.OperatingMode, cond string) error {
	name, err := s.sandboxForWrite(ctx)
	if err != nil {
		return err
	}
	sandboxes := s.client.clientset.AgentsV1beta1().Sandboxes(s.namespace)
	patch := fmt.Appendf(nil, `{"spec":{"operatingMode":%q}}`, mode)
	var patched *agentsv1beta1.Sandbox
	// A merge patch of one field is idempotent: repeat it on any transient failure.
	err = retryOn(ctx, isTransient, func() error {
		var err error
		patched, err = sandboxes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("setting sandbox %s/%s to %s: %w", s.namespace, name, mode, err)
	}
	waiter := s.client.newSandbox(s.namespace, KindSandbox, name)
	waiter.recordSandbox(patched)
	return waiter.waitFor(ctx, patched.Generation, cond)
}

// Close deletes the claim, and so its sandbox (for a handle of KindSandbox, the Sandbox). A
// claim already gone is not an error.
func (s *Sandbox) Close(ctx context.Context) (err error) {
	ctx, span := s.startSpan(ctx, "sandbox.Close")
	defer func() { endSpan(span, err) }()
	err = retryOn(ctx, isTransient, func() error {
		if s.kind == KindClaim {
			return s.client.clientset.ExtensionsV1beta1().SandboxClaims(s.namespace).Delete(ctx, s.name, metav1.DeleteOptions{})
		}
		return s.client.clientset.AgentsV1beta1().Sandboxes(s.namespace).Delete(ctx, s.name, metav1.DeleteOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// subresource is a request to the handle's subresource sub (exec, log, portforward, proxy).
func (s *Sandbox) subresource(verb, sub string) *rest.Request {
	return s.resourceRequest(verb, s.name).SubResource(sub)
}

// resourceRequest is a request for the claim or sandbox object, named objectName (the name, or
// NAME:PORT for the proxy).
func (s *Sandbox) resourceRequest(verb, objectName string) *rest.Request {
	if s.kind == KindClaim {
		return s.client.clientset.ExtensionsV1beta1().RESTClient().Verb(verb).Namespace(s.namespace).Resource("sandboxclaims").Name(objectName)
	}
	return s.client.clientset.AgentsV1beta1().RESTClient().Verb(verb).Namespace(s.namespace).Resource("sandboxes").Name(objectName)
}
