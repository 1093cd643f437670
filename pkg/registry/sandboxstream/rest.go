// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxstream

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/rest"
)

// upgradeMethods are those of pods/exec, attach and portforward: GET for a WebSocket, POST for
// SPDY.
var upgradeMethods = []string{"GET", "POST"}

// maxCommandInEvent bounds the command line an Event quotes.
const maxCommandInEvent = 512

// Storage returns the exec, attach, log and portforward subresources of a kind, keyed by
// subresource name; resolve finds the Sandbox an object of the kind is for.
func (s *Streams) Storage(kind schema.GroupKind, resolve Resolver) map[string]rest.Storage {
	base := subresource{streams: s, kind: kind, resolve: resolve}
	return map[string]rest.Storage{
		"exec":        &ExecREST{base},
		"attach":      &AttachREST{base},
		"portforward": &PortForwardREST{base},
		"log":         &LogREST{base},
	}
}

type subresource struct {
	streams *Streams
	kind    schema.GroupKind
	resolve Resolver
}

// Destroy releases nothing: the kind's storage is destroyed with its own endpoint.
func (subresource) Destroy() {}

// ExecREST serves KIND/NAME/exec as pods/NAME/exec on the Sandbox's pod.
type ExecREST struct{ subresource }

var _ rest.Connecter = &ExecREST{}

// New returns the subresource's kind, its options, as pods/exec does.
func (r *ExecREST) New() runtime.Object { return &corev1.PodExecOptions{} }

// ConnectMethods are GET (WebSocket) and POST (SPDY).
func (r *ExecREST) ConnectMethods() []string { return upgradeMethods }

// NewConnectOptions returns the query type of pods/exec.
func (r *ExecREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodExecOptions{}, false, ""
}

// Connect checks the query and returns the handler that forwards the stream.
func (r *ExecREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodExecOptions)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("invalid options object: %T", opts))
	}
	if errs := validateExec(o); len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.kind, name, errs)
	}
	// The Event quotes the command as asked, without the claim's env it may be given.
	command := o.Command
	return r.streams.connect(ctx, r.resolve, session{
		kind: r.kind, name: name, subresource: "exec", opts: o, container: &o.Container,
		event: func(u user.Info, container string) (string, string) {
			return "Exec", fmt.Sprintf("%s runs %s in container %s", u.GetName(), quoteCommand(command), container)
		},
	}, responder)
}

// AttachREST serves KIND/NAME/attach as pods/NAME/attach on the Sandbox's pod.
type AttachREST struct{ subresource }

var _ rest.Connecter = &AttachREST{}

// New returns the subresource's kind, its options, as pods/attach does.
func (r *AttachREST) New() runtime.Object { return &corev1.PodAttachOptions{} }

// ConnectMethods are GET (WebSocket) and POST (SPDY).
func (r *AttachREST) ConnectMethods() []string { return upgradeMethods }

// NewConnectOptions returns the query type of pods/attach.
func (r *AttachREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodAttachOptions{}, false, ""
}

// Connect checks the query and returns the handler that forwards the stream.
func (r *AttachREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodAttachOptions)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("invalid options object: %T", opts))
	}
	if errs := validateStreams(o.Stdin, o.Stdout, o.Stderr); len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.kind, name, errs)
	}
	return r.streams.connect(ctx, r.resolve, session{
		kind: r.kind, name: name, subresource: "attach", opts: o, container: &o.Container,
		event: func(u user.Info, container string) (string, string) {
			return "Attach", fmt.Sprintf("%s attaches to container %s", u.GetName(), container)
		},
	}, responder)
}

// PortForwardREST serves KIND/NAME/portforward as pods/NAME/portforward on the Sandbox's pod.
// The ports come in the stream (SPDY) or the query (WebSocket), as for pods: any port of the
// pod's network namespace, which is the sandbox's own.
type PortForwardREST struct{ subresource }

var _ rest.Connecter = &PortForwardREST{}

// New returns the subresource's kind, its options, as pods/portforward does.
func (r *PortForwardREST) New() runtime.Object { return &corev1.PodPortForwardOptions{} }

// ConnectMethods are GET (WebSocket) and POST (SPDY).
func (r *PortForwardREST) ConnectMethods() []string { return upgradeMethods }

// NewConnectOptions returns the query type of pods/portforward.
func (r *PortForwardREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &corev1.PodPortForwardOptions{}, false, ""
}

// Connect returns the handler that forwards the stream.
func (r *PortForwardREST) Connect(ctx context.Context, name string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	o, ok := opts.(*corev1.PodPortForwardOptions)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("invalid options object: %T", opts))
	}
	return r.streams.connect(ctx, r.resolve, session{kind: r.kind, name: name, subresource: "portforward", opts: o}, responder)
}

// LogREST serves KIND/NAME/log as pods/NAME/log on the Sandbox's pod, authorized as get.
type LogREST struct{ subresource }

var (
	_ rest.GetterWithOptions = &LogREST{}
	_ rest.StorageMetadata   = &LogREST{}
)

// New returns the subresource's kind, its options.
func (r *LogREST) New() runtime.Object { return &corev1.PodLogOptions{} }

// NewGetOptions returns the query type of pods/log.
func (r *LogREST) NewGetOptions() (runtime.Object, bool, string) {
	return &corev1.PodLogOptions{}, false, ""
}

// ProducesMIMETypes is text/plain, as for pods/log.
func (r *LogREST) ProducesMIMETypes(string) []string { return []string{"text/plain"} }

// ProducesObject is a string, as for pods/log.
func (r *LogREST) ProducesObject(string) any { return "" }

// Get checks the query and returns the log stream.
func (r *LogREST) Get(ctx context.Context, name string, opts runtime.Object) (runtime.Object, error) {
	o, ok := opts.(*corev1.PodLogOptions)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("invalid options object: %T", opts))
	}
	if errs := validateLog(o); len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.kind, name, errs)
	}
	return r.streams.log(ctx, r.resolve, r.kind, name, o)
}

// quoteCommand is the command line for an Event, bounded.
func quoteCommand(command []string) string {
	quoted := fmt.Sprintf("%q", command)
	if len(quoted) > maxCommandInEvent {
		quoted = quoted[:maxCommandInEvent] + "..."
	}
	return strings.TrimSpace(quoted)
}
