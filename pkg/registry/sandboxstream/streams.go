// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/apiserver/pkg/registry/rest"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
)

// DefaultContainerAnnotation names the container kubectl and these subresources pick when the
// request names none.
const DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// Config is what Streams need from the server.
type Config struct {
	// KubeConfig reaches the cluster's kube-apiserver as this server; nil: every request gets a
	// 503.
	KubeConfig *restclient.Config
	// Pods finds a Sandbox's pod (the proxy's cache).
	Pods sandboxproxy.PodGetter
	// Waker wakes suspended sandboxes and records their activity; nil: a suspended sandbox gets a
	// 503.
	Waker sandboxproxy.Waker
	// Authorizer re-authorizes an exec, attach or portforward request that came as a GET (a
	// WebSocket) for create; nil allows.
	Authorizer authorizer.Authorizer
	// Events records an Event on the Sandbox for each exec and attach session; nil records none.
	Events record.EventRecorder
	// HostNetwork are the nodes whose host-network pods exec, attach and portforward may reach,
	// as for the proxy: such a pod's network namespace is the node's.
	HostNetwork sandboxproxy.HostNetworkRanges
	// Streams bounds the exec, attach and portforward sessions and followed logs open at once,
	// per sandbox and per server replica; nil: unbounded.
	Streams *sandboxproxy.ConnectionLimit
}

// Streams serves the streaming subresources of Sandboxes.
type Streams struct {
	Config
	kube *kubeAPI
}

// New returns the Streams of c.
func New(c Config) (*Streams, error) {
	s := &Streams{Config: c}
	if c.KubeConfig != nil {
		kube, err := newKubeAPI(c.KubeConfig)
		if err != nil {
			return nil, fmt.Errorf("making the streams' transport to the cluster: %w", err)
		}
		s.kube = kube
	}
	return s, nil
}

// Resolver returns the Sandbox a request for the named object of a kind (a Sandbox or a claim)
// is for.
type Resolver func(ctx context.Context, name string) (*agents.Sandbox, error)

// session is one exec, attach or portforward request, resolved down to its options.
type session struct {
	kind        schema.GroupKind
	name        string
	subresource string
	opts        runtime.Object
	// container points at the options' container field, which is defaulted and checked; nil for
	// portforward.
	container *string
	// event, when set, is the Event reason and message recorded on the Sandbox.
	event func(u user.Info, container string) (reason, message string)
}

// connect returns the handler that forwards the session to the Sandbox's pod: authorized as
// create, the Sandbox woken, its activity counted while the stream lasts.
func (s *Streams) connect(ctx context.Context, resolve Resolver, sess session, responder rest.Responder) (http.Handler, error) {
	if err := s.authorizeCreate(ctx); err != nil {
		return nil, err
	}
	sb, err := resolve(ctx, sess.name)
	if err != nil {
		return nil, err
	}
	if s.Waker != nil {
		if sb, err = s.Waker.Wake(ctx, sb); err != nil {
			return nil, err
		}
	}
	pod, err := s.podOf(sb)
	if err != nil {
		return nil, err
	}
	if why := s.HostNetwork.Refusal(pod); why != "" {
		return nil, apierrors.NewForbidden(requestResource(ctx, sess), sess.name, errors.New(why))
	}
	container := ""
	if sess.container != nil {
		if *sess.container, err = containerOf(sess.kind, sess.name, pod, *sess.container); err != nil {
			return nil, err
		}
		container = *sess.container
	}
	if exec, ok := sess.opts.(*corev1.PodExecOptions); ok {
		exec.Command = withLateEnv(sb, pod, container, exec.Command)
	}
	location, err := s.kube.location(pod, sess.subresource, sess.opts)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	forward := s.kube.forward(location, responder)
	u, _ := genericapirequest.UserFrom(ctx)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		done, err := s.Streams.Admit(sb)
		if err != nil {
			responder.Error(err)
			return
		}
		defer done()
		if s.Waker != nil {
			defer s.Waker.Begin(sb)()
		}
		if sess.event != nil && s.Events != nil && u != nil {
			reason, message := sess.event(u, container)
			s.Events.Event(reference(sb), corev1.EventTypeNormal, reason, message)
		}
		forward.ServeHTTP(w, req)
	}), nil
}

// log returns the stream of the log of the Sandbox's pod. A log neither wakes the Sandbox nor
// counts as its activity: whoever may read it (view included) does not keep it running.
func (s *Streams) log(ctx context.Context, resolve Resolver, kind schema.GroupKind, name string, opts *corev1.PodLogOptions) (runtime.Object, error) {
	sb, err := resolve(ctx, name)
	if err != nil {
		return nil, err
	}
	if sandboxproxy.Suspended(sb) {
		return nil, notRunning(sb, "it is suspended")
	}
	pod, err := s.podOf(sb)
	if err != nil {
		return nil, err
	}
	if opts.Container, err = containerOf(kind, name, pod, opts.Container); err != nil {
		return nil, err
	}
	location, err := s.kube.location(pod, "log", opts)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	streamer := s.kube.logStreamer(location, opts.Follow)
	if !opts.Follow {
		return streamer, nil
	}
	// A followed log stays open as long as the caller likes: it counts as a stream until the
	// response is done.
	done, err := s.Streams.Admit(sb)
	if err != nil {
		return nil, err
	}
	return &boundedStreamer{LocationStreamer: streamer, done: done}, nil
}

// podOf returns the Sandbox's pod: the one its UID controls, never another of that name.
func (s *Streams) podOf(sb *agents.Sandbox) (*corev1.Pod, error) {
	if s.kube == nil || s.Pods == nil {
		return nil, apierrors.NewServiceUnavailable("this server has no connection to the cluster to reach the sandbox's pod")
	}
	pod, err := s.Pods(sb.Namespace, sandboxproxy.PodName(sb))
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("finding the pod of sandbox %s/%s: %w", sb.Namespace, sb.Name, err))
	}
	if pod == nil {
		return nil, notRunning(sb, "its pod does not exist")
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref == nil || ref.UID != sb.UID {
		return nil, notRunning(sb, fmt.Sprintf("pod %s is not controlled by it", pod.Name))
	}
	return pod, nil
}

// containerOf checks that the requested container is the one the sandbox opens to its users:
// the regular container the pod's default-container annotation names (the template author's
// choice; claims cannot set kubernetes.io annotations), else the first. Sidecars and init
// containers, which may hold the template author's credentials, are never reached. None
// requested: that one.
func containerOf(kind schema.GroupKind, name string, pod *corev1.Pod, requested string) (string, error) {
	open := OpenContainer(pod)
	if open == "" {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s has no container", pod.Name))
	}
	if requested == "" {
		return open, nil
	}
	if requested != open {
		return "", apierrors.NewInvalid(kind, name, field.ErrorList{field.NotSupported(field.NewPath("container"), requested, []string{open})})
	}
	return requested, nil
}

// OpenContainer is the container of pod that its sandbox opens to its users (see containerOf),
// "" when it has none.
func OpenContainer(pod *corev1.Pod) string {
	if len(pod.Spec.Containers) == 0 {
		return ""
	}
	if d := pod.Annotations[DefaultContainerAnnotation]; d != "" && slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == d }) {
		return d
	}
	return pod.Spec.Containers[0].Name
}

// requestResource is the resource and subresource the request is for, for errors.
func requestResource(ctx context.Context, sess session) schema.GroupResource {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		return schema.GroupResource{Group: info.APIGroup, Resource: info.Resource + "/" + info.Subresource}
	}
	return schema.GroupResource{Group: sess.kind.Group, Resource: sess.subresource}
}

// authorizeCreate asks whether the user may create the subresource, for a request authorized with
// another verb: kube-apiserver and this server authorize a GET (a WebSocket) as get, while these
// subresources act as pods/exec does and need create whatever the method, as pods/exec does.
func (s *Streams) authorizeCreate(ctx context.Context) error {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("no request info to authorize"))
	}
	if s.Authorizer == nil || info.Verb == "create" {
		return nil
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewForbidden(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource + "/" + info.Subresource}, info.Name, fmt.Errorf("no user to authorize"))
	}
	attrs := authorizer.AttributesRecord{
		User: u, Verb: "create", Namespace: info.Namespace, APIGroup: info.APIGroup, APIVersion: info.APIVersion,
		Resource: info.Resource, Subresource: info.Subresource, Name: info.Name, ResourceRequest: true,
	}
	decision, reason, err := s.Authorizer.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil && reason == "" {
		reason = err.Error()
	}
	return responsewriters.ForbiddenStatusError(attrs, reason)
}

// reference names the Sandbox in its Events.
func reference(sb *agents.Sandbox) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: agentsv1beta1.SchemeGroupVersion.String(), Kind: "Sandbox",
		Namespace: sb.Namespace, Name: sb.Name, UID: sb.UID, ResourceVersion: sb.ResourceVersion,
	}
}

// notRunning is the 503, with Retry-After, for a sandbox whose pod cannot be reached now.
func notRunning(sb *agents.Sandbox, why string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusServiceUnavailable,
		Reason:  metav1.StatusReasonServiceUnavailable,
		Message: fmt.Sprintf("sandbox %s/%s is not running: %s", sb.Namespace, sb.Name, why),
		Details: &metav1.StatusDetails{Name: sb.Name, Group: agents.GroupName, Kind: "sandboxes", RetryAfterSeconds: sandboxproxy.RetryAfterSeconds},
	}}
}

// boundedStreamer is a followed log that gives back its place among the streams when the
// response ends (the apiserver closes the stream it reads).
type boundedStreamer struct {
	*genericrest.LocationStreamer
	done func()
}

func (b *boundedStreamer) InputStream(ctx context.Context, apiVersion, acceptHeader string) (io.ReadCloser, bool, string, error) {
	stream, flush, contentType, err := b.LocationStreamer.InputStream(ctx, apiVersion, acceptHeader)
	if err != nil {
		b.done()
		return nil, false, "", err
	}
	return &closeNotifier{ReadCloser: stream, done: b.done}, flush, contentType, nil
}

type closeNotifier struct {
	io.ReadCloser
	done func()
}

func (c *closeNotifier) Close() error {
	defer c.done()
	return c.ReadCloser.Close()
}

// withLateEnv gives command the env the Sandbox's pod template sets and its running pod lacks:
// what a claim gave a warm member after its pod started (see adoption.LateEnv). It runs through
// env(1), which the image must have; a command without such env is left as it is.
func withLateEnv(sb *agents.Sandbox, pod *corev1.Pod, container string, command []string) []string {
	late := adoption.LateEnv(&sb.Spec.PodTemplate.Spec, &pod.Spec, container)
	if len(late) == 0 {
		return command
	}
	wrapped := make([]string, 0, 2+len(late)+len(command))
	wrapped = append(wrapped, "env", "--")
	wrapped = append(wrapped, late...)
	return append(wrapped, command...)
}
