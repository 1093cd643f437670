// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

const (
	// CreatedByLabel names the client that created a claim; the server's client-seen startup
	// metric counts claims by it.
	CreatedByLabel = "agents.x-k8s.io/created-by"
	// CreatedByValue is what this package writes in CreatedByLabel.
	CreatedByValue = "sandbox-sdk-go"
	// FirstRequestedAtAnnotation records (RFC 3339) when the client first asked for the claim,
	// before any retry, so the server can measure startup as the client saw it.
	FirstRequestedAtAnnotation = "agents.x-k8s.io/client-first-requested-at"

	// DefaultGenerateName prefixes the names of claims created without WithName or
	// WithGenerateName.
	DefaultGenerateName = "sandbox-"

	// instrumentationScope names this package's spans.
	instrumentationScope = "github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// Client claims and opens sandboxes. It is safe for concurrent use.
type Client struct {
	config    *rest.Config
	clientset versioned.Interface
	tracer    trace.Tracer
}

// ClientOption configures a Client.
type ClientOption func(*clientSettings)

type clientSettings struct {
	tracerProvider trace.TracerProvider
}

// WithTracerProvider makes the client's spans with provider instead of the global one.
func WithTracerProvider(provider trace.TracerProvider) ClientOption {
	return func(s *clientSettings) { s.tracerProvider = provider }
}

// NewClient returns a client that acts with the identity and rights of config, as kubectl
// would with the same kubeconfig.
func NewClient(config *rest.Config, opts ...ClientOption) (*Client, error) {
	if config == nil {
		return nil, errors.New("sandbox: NewClient needs a rest.Config")
	}
	settings := clientSettings{tracerProvider: otel.GetTracerProvider()}
	for _, opt := range opts {
		opt(&settings)
	}
	config = rest.CopyConfig(config)
	clientset, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return newClient(config, clientset, settings.tracerProvider), nil
}

func newClient(config *rest.Config, clientset versioned.Interface, provider trace.TracerProvider) *Client {
	return &Client{config: config, clientset: clientset, tracer: provider.Tracer(instrumentationScope)}
}

// Clientset is the generated clientset the client uses, for what this package does not cover.
func (c *Client) Clientset() versioned.Interface { return c.clientset }

// Source is what a claim takes its sandbox from: a template (FromTemplate) or a warm pool
// (FromPool).
type Source struct {
	template string
	pool     string
}

// FromTemplate claims a sandbox made from the SandboxTemplate name, taken from any warm pool of
// that template when one has a member ready.
func FromTemplate(name string) Source { return Source{template: name} }

// FromPool claims a member of the SandboxWarmPool name (its template is the pool's), or a
// sandbox made from the pool's template when the pool has none left.
func FromPool(name string) Source { return Source{pool: name} }

func (s Source) String() string {
	if s.pool != "" {
		return "pool " + s.pool
	}
	return "template " + s.template
}

// ClaimOption configures Claim.
type ClaimOption func(*claimSettings)

type claimSettings struct {
	name, generateName string
	labels             map[string]string
	annotations        map[string]string
	shutdownTime       *time.Time
	shutdownPolicy     extensionsv1beta1.ShutdownPolicy
	idleTimeout        time.Duration
	env                []extensionsv1beta1.EnvVar
	podMetadata        agentsv1beta1.PodMetadata
	noWait             bool
}

// WithName names the claim; by default its name is generated with the prefix
// DefaultGenerateName.
func WithName(name string) ClaimOption { return func(s *claimSettings) { s.name = name } }

// WithGenerateName has the server generate the claim's name from prefix.
func WithGenerateName(prefix string) ClaimOption {
	return func(s *claimSettings) { s.generateName = prefix }
}

// WithLabels adds labels to the claim.
func WithLabels(labels map[string]string) ClaimOption {
	return func(s *claimSettings) { s.labels = maps.Clone(labels) }
}

// WithAnnotations adds annotations to the claim.
func WithAnnotations(annotations map[string]string) ClaimOption {
	return func(s *claimSettings) { s.annotations = maps.Clone(annotations) }
}

// WithShutdownTime has the server delete the claim and its sandbox at t.
func WithShutdownTime(t time.Time) ClaimOption {
	return func(s *claimSettings) { s.shutdownTime = &t }
}

// WithShutdownPolicy says what happens at the shutdown time: Delete (the default here),
// DeleteForeground or Retain.
func WithShutdownPolicy(policy extensionsv1beta1.ShutdownPolicy) ClaimOption {
	return func(s *claimSettings) { s.shutdownPolicy = policy }
}

// WithIdleTimeout has the server suspend the sandbox after d without traffic through its proxy
// (it is woken by the next request).
func WithIdleTimeout(d time.Duration) ClaimOption {
	return func(s *claimSettings) { s.idleTimeout = d }
}

// WithEnv sets an environment variable in the sandbox's main container (the template must
// allow it).
func WithEnv(name, value string) ClaimOption {
	return func(s *claimSettings) {
		s.env = append(s.env, extensionsv1beta1.EnvVar{Name: name, Value: value})
	}
}

// WithPodMetadata adds labels and annotations to the sandbox's pod (the claim's
// spec.additionalPodMetadata; the template must allow the keys).
func WithPodMetadata(labels, annotations map[string]string) ClaimOption {
	return func(s *claimSettings) {
		s.podMetadata = agentsv1beta1.PodMetadata{Labels: maps.Clone(labels), Annotations: maps.Clone(annotations)}
	}
}

// WithoutWait returns as soon as the claim is created; call Sandbox.WaitReady before using it.
func WithoutWait() ClaimOption { return func(s *claimSettings) { s.noWait = true } }

// Claim creates a SandboxClaim in namespace from source and, unless WithoutWait is given, waits
// (by watching the claim) until it is Ready. When waiting fails the claim is deleted again and
// the error returned; ctx bounds the wait.
func (c *Client) Claim(ctx context.Context, namespace string, source Source, opts ...ClaimOption) (sb *Sandbox, err error) {
	requestedAt := time.Now()
	if (source.template == "") == (source.pool == "") {
		return nil, errors.New("sandbox: Claim needs FromTemplate(name) or FromPool(name)")
	}
	settings := claimSettings{}
	for _, opt := range opts {
		opt(&settings)
	}
	ctx, span := c.tracer.Start(ctx, "sandbox.Claim", trace.WithAttributes(
		attribute.String("k8s.namespace.name", namespace), attribute.String("sandbox.source", source.String())))
	defer func() { endSpan(span, err) }()

	claim := newClaim(source, settings, requestedAt)
	// The server continues the client's trace from the claim.
	if value := tracecontext.Value(ctx); value != "" {
		claim.Annotations[tracecontext.Annotation] = value
	}
	claims := c.clientset.ExtensionsV1beta1().SandboxClaims(namespace)
	var created *extensionsv1beta1.SandboxClaim
	// A create is repeated only when the server said it did nothing (throttled).
	err = retryOn(ctx, apierrors.IsTooManyRequests, func() error {
		var err error
		created, err = claims.Create(ctx, claim, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating a claim from %s in %s: %w", source, namespace, err)
	}
	span.SetAttributes(attribute.String("sandbox.claim", created.Name))
	sb = c.newSandbox(namespace, KindClaim, created.Name)
	sb.recordClaim(created)
	if settings.noWait {
		return sb, nil
	}
	if err := sb.WaitReady(ctx); err != nil {
		// Do not leave behind a claim nobody holds a handle on.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if delErr := sb.Close(cleanup); delErr != nil {
			return nil, errors.Join(err, fmt.Errorf("deleting claim %s/%s: %w", namespace, created.Name, delErr))
		}
		return nil, err
	}
	return sb, nil
}

// newClaim is the SandboxClaim Claim creates.
func newClaim(source Source, s claimSettings, requestedAt time.Time) *extensionsv1beta1.SandboxClaim {
	claim := &extensionsv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:         s.name,
			GenerateName: s.generateName,
			Labels:       map[string]string{},
			Annotations:  map[string]string{},
		},
	}
	if claim.Name == "" && claim.GenerateName == "" {
		claim.GenerateName = DefaultGenerateName
	}
	maps.Copy(claim.Labels, s.labels)
	maps.Copy(claim.Annotations, s.annotations)
	claim.Labels[CreatedByLabel] = CreatedByValue
	claim.Annotations[FirstRequestedAtAnnotation] = requestedAt.UTC().Format(time.RFC3339)
	if source.pool != "" {
		claim.Spec.WarmPoolRef = &extensionsv1beta1.SandboxWarmPoolRef{Name: source.pool}
	} else {
		claim.Spec.TemplateRef.Name = source.template
	}
	claim.Spec.Env = s.env
	claim.Spec.AdditionalPodMetadata = s.podMetadata
	if s.shutdownTime != nil || s.idleTimeout > 0 {
		lifecycle := &extensionsv1beta1.Lifecycle{}
		if s.shutdownTime != nil {
			t := metav1.NewTime(*s.shutdownTime)
			lifecycle.ShutdownTime = &t
			policy := s.shutdownPolicy
			if policy == "" {
				policy = extensionsv1beta1.ShutdownPolicyDelete
			}
			lifecycle.ShutdownPolicy = &policy
		}
		if s.idleTimeout > 0 {
			lifecycle.IdleTimeout = &metav1.Duration{Duration: s.idleTimeout}
		}
		claim.Spec.Lifecycle = lifecycle
	}
	return claim
}

// Kind says whether a Sandbox handle was opened as a claim or as a sandbox by its own name.
type Kind string

const (
	// KindClaim: the handle names a SandboxClaim; everything goes through sandboxclaims/*.
	KindClaim Kind = "sandboxclaim"
	// KindSandbox: the handle names a Sandbox; everything goes through sandboxes/*.
	KindSandbox Kind = "sandbox"
)

// OpenClaim returns a handle on the existing claim name in namespace.
func (c *Client) OpenClaim(ctx context.Context, namespace, name string) (*Sandbox, error) {
	return c.open(ctx, namespace, KindClaim, name)
}

// OpenSandbox returns a handle on the Sandbox name in namespace, reached through the sandboxes/*
// subresources (which need rights on sandboxes, not claims). Close deletes the Sandbox.
func (c *Client) OpenSandbox(ctx context.Context, namespace, name string) (*Sandbox, error) {
	return c.open(ctx, namespace, KindSandbox, name)
}

// Open returns a handle on name, which is a claim or a sandbox: "sandboxclaim/NAME" and
// "sandbox/NAME" say which (kubectl's resource names and short names are understood); a bare
// NAME is tried as a claim first, then as a sandbox.
func (c *Client) Open(ctx context.Context, namespace, name string) (*Sandbox, error) {
	kind, bare, err := ParseName(name)
	if err != nil {
		return nil, err
	}
	if kind != "" {
		return c.open(ctx, namespace, kind, bare)
	}
	sb, err := c.open(ctx, namespace, KindClaim, bare)
	// Forbidden too: a user with rights on sandboxes only may not read claims.
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		if sbx, sbErr := c.open(ctx, namespace, KindSandbox, bare); sbErr == nil {
			return sbx, nil
		} else if !apierrors.IsNotFound(sbErr) && !apierrors.IsForbidden(sbErr) {
			return nil, sbErr
		}
	}
	return sb, err
}

// ParseName splits "KIND/NAME" into the kind and the name; a bare NAME has no kind.
func ParseName(s string) (Kind, string, error) {
	kind, name, found := strings.Cut(s, "/")
	if !found {
		kind, name = "", s
	}
	if name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("sandbox: %q is not NAME, sandboxclaim/NAME or sandbox/NAME", s)
	}
	switch strings.ToLower(kind) {
	case "":
		return "", name, nil
	case "sandboxclaim", "sandboxclaims", "sandboxclaim.extensions.agents.x-k8s.io", "sandboxclaims.extensions.agents.x-k8s.io":
		return KindClaim, name, nil
	case "sandbox", "sandboxes", "sandbox.agents.x-k8s.io", "sandboxes.agents.x-k8s.io":
		return KindSandbox, name, nil
	}
	return "", "", fmt.Errorf("sandbox: %q is neither a sandboxclaim nor a sandbox", kind)
}

func (c *Client) open(ctx context.Context, namespace string, kind Kind, name string) (*Sandbox, error) {
	sb := c.newSandbox(namespace, kind, name)
	if err := sb.refresh(ctx); err != nil {
		return nil, err
	}
	return sb, nil
}
