// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/e2b/envd"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxstream"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// resolver authorizes the data plane's requests: the access token names the key; the key's
// namespace holds the claim; the token must be the one of that key for that claim's UID; the
// key's identity must be allowed to exec in the claim (SubjectAccessReview); then the claim's
// Sandbox and the pod that Sandbox's UID controls are the target. Anything absent from the key's
// namespace is a 404, as if it did not exist anywhere.
type resolver struct{ s *Server }

var _ envd.Resolver = resolver{}

// resolvedTTL is how long a resolution is reused for the same token and sandbox: a command's
// requests (start, stdin, kill, ...) come in bursts. Pausing, resuming and killing through the
// endpoint forget it at once; a key revoked or a right taken away takes effect within it (the
// server's authorizer caches allowed decisions longer, 10 s by default).
const resolvedTTL = 2 * time.Second

// resolvedCache holds recent resolutions by token and sandbox ID.
type resolvedCache struct {
	mu      sync.Mutex
	entries map[string]resolvedEntry
}

type resolvedEntry struct {
	sb      *envd.Sandbox
	expires time.Time
}

func (c *resolvedCache) get(key string, now time.Time) *envd.Sandbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.After(e.expires) {
		return nil
	}
	return e.sb
}

func (c *resolvedCache) put(key string, sb *envd.Sandbox, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]resolvedEntry{}
	}
	if len(c.entries) >= 4096 {
		for k, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, k)
			}
		}
	}
	c.entries[key] = resolvedEntry{sb: sb, expires: now.Add(resolvedTTL)}
}

// forget drops the resolutions of the sandbox name of namespace.
func (c *resolvedCache) forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.sb.Namespace == namespace && e.sb.ID == name {
			delete(c.entries, k)
		}
	}
}

func (res resolver) Resolve(r *http.Request) (*envd.Sandbox, error) {
	name := r.Header.Get(sandboxIDHeader)
	token := r.Header.Get(accessTokenHeader)
	key := token + "\x00" + name
	now := time.Now()
	if sb := res.s.resolved.get(key, now); sb != nil {
		return sb, nil
	}
	sb, err := res.resolve(r, name, token)
	if err == nil {
		res.s.resolved.put(key, sb, now)
	}
	return sb, err
}

func (res resolver) resolve(r *http.Request, name, token string) (*envd.Sandbox, error) {
	s := res.s
	ctx := r.Context()
	if token == "" {
		return nil, &envd.StatusError{Code: http.StatusUnauthorized, Message: "missing access token: send the sandbox's envdAccessToken in X-Access-Token"}
	}
	keyID := keyOf(token)
	if keyID == "" {
		return nil, &envd.StatusError{Code: http.StatusUnauthorized, Message: "invalid access token"}
	}
	id, err := s.keys.byID(keyID, "")
	if errors.Is(err, errUnknownKey) {
		return nil, &envd.StatusError{Code: http.StatusUnauthorized, Message: "invalid access token: its API key is unknown or revoked"}
	}
	if err != nil {
		return nil, err
	}
	notFound := &envd.StatusError{Code: http.StatusNotFound, Message: fmt.Sprintf("sandbox %q not found", name)}
	claim, err := s.admin.ExtensionsV1beta1().SandboxClaims(id.Namespace).Get(ctx, name, metav1.GetOptions{})
	if isAbsent(err) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if !s.signer.valid(token, keyID, claim.Namespace, claim.Name, claim.UID) {
		return nil, &envd.StatusError{Code: http.StatusUnauthorized, Message: fmt.Sprintf("invalid access token for sandbox %q", name)}
	}
	if err := s.authorizeClaim(ctx, id, "create", "exec", claim.Name); err != nil {
		var forbidden *errForbidden
		if errors.As(err, &forbidden) {
			return nil, &envd.StatusError{Code: http.StatusForbidden, Message: forbidden.message}
		}
		return nil, err
	}
	sb, err := s.sandboxOf(ctx, claim)
	if err != nil {
		return nil, err
	}
	if sb == nil {
		return nil, &envd.StatusError{Code: http.StatusBadGateway, Message: fmt.Sprintf("sandbox %q has not started yet", name)}
	}
	if stateOf(sb) == statePaused {
		return nil, &envd.StatusError{Code: http.StatusBadGateway, Message: fmt.Sprintf("sandbox %q is paused: connect to it to resume it", name)}
	}
	pod, err := s.podOf(r, sb)
	if err != nil {
		return nil, err
	}
	container := sandboxstream.OpenContainer(pod)
	return &envd.Sandbox{
		ID: name, Namespace: pod.Namespace, Pod: pod.Name, Container: container,
		Env: claimEnv(claim, container, pod.Spec.Containers[0].Name), Key: id.KeyID,
	}, nil
}

// podOf is the running pod that sb's UID controls.
func (s *Server) podOf(r *http.Request, sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	notRunning := &envd.StatusError{Code: http.StatusBadGateway, Message: fmt.Sprintf("sandbox %q is not running", sb.Name)}
	var pod *corev1.Pod
	var err error
	if s.pods != nil {
		pod, err = s.pods(sb.Namespace, podName(sb))
	} else {
		pod, err = s.kube.CoreV1().Pods(sb.Namespace).Get(r.Context(), podName(sb), metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) || (err == nil && pod == nil) {
		return nil, notRunning
	}
	if err != nil {
		return nil, err
	}
	if !objectmeta.IsControlledBy(pod, agents.Kind("Sandbox"), sb.UID) || pod.Status.Phase != corev1.PodRunning || len(pod.Spec.Containers) == 0 {
		return nil, notRunning
	}
	return pod, nil
}

// podName is the name of sb's pod, as the sandbox controller names it.
func podName(sb *agentsv1beta1.Sandbox) string {
	if n := sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; n != "" {
		return n
	}
	return sb.Name
}

// claimEnv is the claim's own environment for container: its entries naming it, and those
// naming none when it is the pod's first container.
func claimEnv(claim *extensionsv1beta1.SandboxClaim, container, first string) map[string]string {
	env := map[string]string{}
	for _, e := range claim.Spec.Env {
		if e.ContainerName == container || (e.ContainerName == "" && container == first) {
			env[e.Name] = e.Value
		}
	}
	return env
}
