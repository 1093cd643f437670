// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/e2b/envd"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// How E2B's notions are kept on a claim.
const (
	// MetadataAnnotation holds a sandbox's E2B metadata (a JSON object of strings).
	MetadataAnnotation = "e2b.sandbox-apiserver.dev/metadata"
	// generateName prefixes the names, and so the E2B IDs, of the claims the endpoint makes.
	generateName = "e2b-"
	// clientID fills E2B's deprecated clientID field.
	clientID = "sandbox-apiserver"
)

// Bounds of what a create asks for.
const (
	// defaultTimeout is E2B's default sandbox lifetime (seconds) when a request gives none.
	defaultTimeout = 300
	// maxTimeout is the longest lifetime a create, connect or setTimeout may ask for: a day.
	maxTimeout = 24 * 60 * 60
	// maxBodyBytes bounds a control-plane request body.
	maxBodyBytes = 1 << 20
	// maxMetadataBytes bounds a sandbox's metadata, kept in one annotation.
	maxMetadataBytes = 16 << 10
)

// controlPlaneRoutes are E2B's REST paths: both the /sandboxes generation (SDK 2.50 creates and
// connects there) and /v2/sandboxes (2.51). Paths of features not served answer 501.
func (s *Server) controlPlaneRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sandboxes", s.create)
	mux.HandleFunc("POST /v2/sandboxes", s.create)
	mux.HandleFunc("GET /sandboxes", s.listV1)
	mux.HandleFunc("GET /v2/sandboxes", s.list)
	mux.HandleFunc("GET /sandboxes/{id}", s.get)
	mux.HandleFunc("DELETE /sandboxes/{id}", s.kill)
	mux.HandleFunc("POST /sandboxes/{id}/timeout", s.setTimeout)
	mux.HandleFunc("POST /sandboxes/{id}/pause", s.pause)
	mux.HandleFunc("POST /sandboxes/{id}/resume", s.resume)
	mux.HandleFunc("POST /sandboxes/{id}/connect", s.connectV1)
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", s.connect)
	for path, what := range map[string]string{
		"/sandboxes/{id}/":       "this sandbox operation (snapshots, forks, network updates, metrics, logs, refreshes)",
		"/v2/sandboxes/{id}/":    "this sandbox operation",
		"GET /sandboxes/metrics": "sandbox metrics",
		"/templates":             "template builds",
		"/templates/":            "template builds",
		"/v2/templates":          "template builds",
		"/v2/templates/":         "template builds",
		"/v3/templates":          "template builds",
		"/snapshots":             "snapshots",
		"/volumes":               "volumes",
		"/volumes/":              "volumes",
		"/secrets":               "secrets",
		"/secrets/":              "secrets",
		"/teams":                 "teams",
		"/teams/":                "teams",
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotImplemented, what+" is not supported by sandbox-apiserver's E2B endpoint (docs/e2b.md)")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no E2B API path %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// newSandboxRequest is the body of a create, both generations.
type newSandboxRequest struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
	Network      json.RawMessage   `json:"network"`
	MCP          json.RawMessage   `json:"mcp"`
	IAM          json.RawMessage   `json:"iam"`
	VolumeMounts []json.RawMessage `json:"volumeMounts"`
}

// unsupported names the first thing the request asks for that the endpoint does not do.
func (req *newSandboxRequest) unsupported() string {
	switch {
	case req.AutoPause != nil && *req.AutoPause:
		return "autoPause (pausing when the timeout passes): a sandbox here is deleted when its timeout passes"
	case req.AutoResume != nil && req.AutoResume.Enabled:
		return "autoResume"
	case req.AllowInternetAccess != nil && !*req.AllowInternetAccess:
		return "allow_internet_access=false: egress is the template's NetworkPolicy"
	case isSet(req.Network):
		return "network: egress is the template's NetworkPolicy"
	case isSet(req.MCP):
		return "mcp"
	case isSet(req.IAM):
		return "iam"
	case len(req.VolumeMounts) > 0:
		return "volumeMounts: volumes are the template's"
	}
	return ""
}

func isSet(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// sandboxResponse is E2B's Sandbox: what create and connect answer.
type sandboxResponse struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// listedSandbox is E2B's ListedSandbox.
type listedSandbox struct {
	TemplateID  string            `json:"templateID"`
	SandboxID   string            `json:"sandboxID"`
	ClientID    string            `json:"clientID"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	CPUCount    int64             `json:"cpuCount"`
	MemoryMB    int64             `json:"memoryMB"`
	DiskSizeMB  int64             `json:"diskSizeMB"`
	Metadata    map[string]string `json:"metadata"`
	State       string            `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
}

// sandboxDetail is E2B's SandboxDetail: what get answers.
type sandboxDetail struct {
	listedSandbox
	EnvdAccessToken string  `json:"envdAccessToken"`
	Domain          *string `json:"domain"`
	Lifecycle       struct {
		AutoResume bool   `json:"autoResume"`
		OnTimeout  string `json:"onTimeout"`
	} `json:"lifecycle"`
}

// Sandbox states in E2B's words.
const (
	stateRunning = "running"
	statePaused  = "paused"
)

// decodeBody reads r's JSON body into v; an empty body is allowed when optional.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON object")
	}
	if optional && errors.Is(err, errEOF) {
		return true
	}
	if err == nil {
		return true
	}
	var typeErr *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid request body: field %s must be %s, not %s", typeErr.Field, jsonType(typeErr.Type.String()), typeErr.Value))
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit))
	case errors.Is(err, errEOF):
		writeError(w, http.StatusBadRequest, "invalid request body: a JSON object is required")
	default:
		writeError(w, http.StatusBadRequest, "invalid request body: "+err.Error())
	}
	return false
}

// jsonType names a Go type of the request bodies as JSON's.
func jsonType(goType string) string {
	switch goType {
	case "string":
		return "a string"
	case "int64", "int32", "int":
		return "an integer"
	case "bool":
		return "a boolean"
	case "map[string]string":
		return "an object of strings"
	}
	return "of another type (" + goType + ")"
}

// timeoutOf checks a requested lifetime in seconds, or takes the default.
func timeoutOf(t *int64) (time.Duration, error) {
	if t == nil {
		return defaultTimeout * time.Second, nil
	}
	if *t < 1 || *t > maxTimeout {
		return 0, fmt.Errorf("timeout must be between 1 and %d seconds, not %d", maxTimeout, *t)
	}
	return time.Duration(*t) * time.Second, nil
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	id := identityFrom(r.Context())
	var req newSandboxRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.TemplateID == "" {
		writeError(w, http.StatusBadRequest, "templateID is required")
		return
	}
	if what := req.unsupported(); what != "" {
		writeError(w, http.StatusBadRequest, "not supported: "+what)
		return
	}
	lifetime, err := timeoutOf(req.Timeout)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	opts := []sandbox.ClaimOption{sandbox.WithGenerateName(generateName), sandbox.WithoutWait(),
		sandbox.WithShutdownTime(time.Now().Add(lifetime)), sandbox.WithShutdownPolicy(extensionsv1beta1.ShutdownPolicyDelete)}
	if len(req.Metadata) > 0 {
		raw, _ := json.Marshal(req.Metadata)
		if len(raw) > maxMetadataBytes {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("metadata is %d bytes encoded, over the %d allowed", len(raw), maxMetadataBytes))
			return
		}
		opts = append(opts, sandbox.WithAnnotations(map[string]string{MetadataAnnotation: string(raw)}))
	}
	for _, name := range sortedKeys(req.EnvVars) {
		opts = append(opts, sandbox.WithEnv(name, req.EnvVars[name]))
	}
	source, status, msg := s.sourceOf(r.Context(), id, req.TemplateID)
	if status != 0 {
		writeError(w, status, msg)
		return
	}
	client, err := s.tenantClient(id)
	if err != nil {
		writeInternal(w, "making a client for the key's identity", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.CreateTimeout)
	defer cancel()
	sb, err := client.Claim(ctx, id.Namespace, source, opts...)
	if err != nil {
		writeAPIError(w, "creating the sandbox", err)
		return
	}
	claim, err := client.Clientset().ExtensionsV1beta1().SandboxClaims(id.Namespace).Get(ctx, sb.Name(), metav1.GetOptions{})
	if err == nil && !isReady(claim.Status.Conditions) {
		err = sb.WaitReady(ctx)
	}
	if err != nil {
		// Leave nothing behind that the caller holds no ID of.
		cleanup, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer stop()
		if delErr := sb.Close(cleanup); delErr != nil {
			klog.ErrorS(delErr, "Deleting an E2B sandbox that did not become Ready", "namespace", id.Namespace, "claim", sb.Name())
		}
		if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
			writeError(w, http.StatusGatewayTimeout, fmt.Sprintf("sandbox from %q not Ready within %s; deleted", req.TemplateID, s.opts.CreateTimeout))
			return
		}
		writeAPIError(w, "waiting for the sandbox", err)
		return
	}
	writeJSON(w, http.StatusCreated, s.sandboxResponse(id, claim))
}

// isReady says whether conditions hold Ready=True.
func isReady(conditions []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conditions, string(agentsv1beta1.SandboxConditionReady))
}

// sourceOf is what templateID names in the key's namespace: a warm pool of that name when one
// exists (its claims are served warm), else the template. Their existence is read with the
// server's rights, in the key's own namespace only; the claim's create then checks the
// identity's right to use them.
func (s *Server) sourceOf(ctx context.Context, id *Identity, templateID string) (source sandbox.Source, status int, msg string) {
	ext := s.admin.ExtensionsV1beta1()
	_, err := ext.SandboxWarmPools(id.Namespace).Get(ctx, templateID, metav1.GetOptions{})
	if err == nil {
		return sandbox.FromPool(templateID), 0, ""
	}
	if !isAbsent(err) {
		return source, http.StatusInternalServerError, "looking up the template: " + err.Error()
	}
	_, err = ext.SandboxTemplates(id.Namespace).Get(ctx, templateID, metav1.GetOptions{})
	if err == nil {
		return sandbox.FromTemplate(templateID), 0, ""
	}
	if !isAbsent(err) {
		return source, http.StatusInternalServerError, "looking up the template: " + err.Error()
	}
	return source, http.StatusNotFound, fmt.Sprintf("template %q not found: no SandboxWarmPool or SandboxTemplate of that name in namespace %s", templateID, id.Namespace)
}

// isAbsent says whether err is a NotFound, or a name the API refuses (which cannot exist).
func isAbsent(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)
}

// sandboxResponse is what create and connect answer for claim.
func (s *Server) sandboxResponse(id *Identity, claim *extensionsv1beta1.SandboxClaim) sandboxResponse {
	return sandboxResponse{
		TemplateID: templateOf(claim), SandboxID: claim.Name, ClientID: clientID, EnvdVersion: envd.Version,
		EnvdAccessToken: s.signer.token(id.KeyID, claim.Namespace, claim.Name, claim.UID), Domain: s.domain(),
	}
}

func (s *Server) domain() *string {
	if s.opts.Domain == "" {
		return nil
	}
	d := s.opts.Domain
	return &d
}

// templateOf is the E2B template ID of claim: its warm pool's or template's name.
func templateOf(claim *extensionsv1beta1.SandboxClaim) string {
	if claim.Spec.WarmPoolRef != nil {
		return claim.Spec.WarmPoolRef.Name
	}
	return claim.Spec.TemplateRef.Name
}

// claimOf reads the claim of the request's {id} as the caller, answering 404 (E2B's not found)
// when it is absent from the key's namespace.
func (s *Server) claimOf(w http.ResponseWriter, r *http.Request) (*Identity, *sandbox.Client, *extensionsv1beta1.SandboxClaim, bool) {
	id := identityFrom(r.Context())
	name := r.PathValue("id")
	client, err := s.tenantClient(id)
	if err != nil {
		writeInternal(w, "making a client for the key's identity", err)
		return nil, nil, nil, false
	}
	claim, err := client.Clientset().ExtensionsV1beta1().SandboxClaims(id.Namespace).Get(r.Context(), name, metav1.GetOptions{})
	// A claim being deleted (its finalizers still at work) is gone for E2B: killed.
	if isAbsent(err) || (err == nil && claim.DeletionTimestamp != nil) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q not found", name))
		return nil, nil, nil, false
	}
	if err != nil {
		writeAPIError(w, "reading the sandbox", err)
		return nil, nil, nil, false
	}
	return id, client, claim, true
}

// sandboxOf reads the Sandbox serving claim with the server's rights (the caller was authorized
// on the claim); nil while it has none.
func (s *Server) sandboxOf(ctx context.Context, claim *extensionsv1beta1.SandboxClaim) (*agentsv1beta1.Sandbox, error) {
	name := claim.Status.SandboxStatus.Name
	if name == "" {
		return nil, nil
	}
	sb, err := s.admin.AgentsV1beta1().Sandboxes(claim.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !servesClaim(sb, claim) {
		return nil, nil
	}
	return sb, nil
}

// servesClaim says whether sb is controlled by claim (its UID, not its name).
func servesClaim(sb *agentsv1beta1.Sandbox, claim *extensionsv1beta1.SandboxClaim) bool {
	ref := metav1.GetControllerOfNoCopy(sb)
	return ref != nil && ref.UID == claim.UID && ref.Kind == "SandboxClaim"
}

// stateOf is E2B's state of a claim's sandbox.
func stateOf(sb *agentsv1beta1.Sandbox) string {
	if sb != nil && sb.Spec.OperatingMode == agentsv1beta1.OperatingModeSuspended {
		return statePaused
	}
	return stateRunning
}

// listed is E2B's listing of claim and its sandbox (nil while it has none).
func listed(claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox) listedSandbox {
	out := listedSandbox{
		TemplateID: templateOf(claim), SandboxID: claim.Name, ClientID: clientID, StartedAt: claim.CreationTimestamp.UTC(),
		Metadata: metadataOf(claim), State: stateOf(sb), EnvdVersion: envd.Version,
	}
	// A claim without an expiry never ends: E2B has no such notion, so say "in a year".
	out.EndAt = out.StartedAt.AddDate(1, 0, 0)
	if lc := claim.Spec.Lifecycle; lc != nil && lc.ShutdownTime != nil {
		out.EndAt = lc.ShutdownTime.UTC()
	}
	if sb != nil {
		out.CPUCount, out.MemoryMB = resourcesOf(&sb.Spec.PodTemplate.Spec)
	}
	return out
}

// metadataOf is the E2B metadata kept on claim, empty when none or unreadable.
func metadataOf(claim *extensionsv1beta1.SandboxClaim) map[string]string {
	out := map[string]string{}
	if raw := claim.Annotations[MetadataAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &out)
	}
	return out
}

// resourcesOf is the CPU count (rounded up) and memory (MiB) the pod's first container may use:
// its limits, else its requests; 0 when unbounded.
func resourcesOf(spec *corev1.PodSpec) (cpu, memoryMB int64) {
	if len(spec.Containers) == 0 {
		return 0, 0
	}
	res := spec.Containers[0].Resources
	pick := func(name corev1.ResourceName) (q int64, ok bool) {
		if v, ok := res.Limits[name]; ok {
			return v.MilliValue(), true
		}
		if v, ok := res.Requests[name]; ok {
			return v.MilliValue(), true
		}
		return 0, false
	}
	if m, ok := pick(corev1.ResourceCPU); ok {
		cpu = (m + 999) / 1000
	}
	if m, ok := pick(corev1.ResourceMemory); ok {
		memoryMB = m / 1000 / (1 << 20)
	}
	return cpu, memoryMB
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id, _, claim, ok := s.claimOf(w, r)
	if !ok {
		return
	}
	sb, err := s.sandboxOf(r.Context(), claim)
	if err != nil {
		writeInternal(w, "reading the sandbox", err)
		return
	}
	out := sandboxDetail{listedSandbox: listed(claim, sb), Domain: s.domain(),
		EnvdAccessToken: s.signer.token(id.KeyID, claim.Namespace, claim.Name, claim.UID)}
	out.Lifecycle.OnTimeout = "kill"
	writeJSON(w, http.StatusOK, out)
}

// kill deletes the claim; one already being deleted is not found, so a second kill is false.
func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	id, client, claim, ok := s.claimOf(w, r)
	if !ok {
		return
	}
	err := client.Clientset().ExtensionsV1beta1().SandboxClaims(id.Namespace).Delete(r.Context(), claim.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
	if isAbsent(err) || apierrors.IsConflict(err) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q not found", claim.Name))
		return
	}
	if err != nil {
		writeAPIError(w, "deleting the sandbox", err)
		return
	}
	s.resolved.forget(claim.Namespace, claim.Name)
	w.WriteHeader(http.StatusNoContent)
}

// timeoutRequest is the body of setTimeout and of connect.
type timeoutRequest struct {
	Timeout *int64 `json:"timeout"`
}

// decodeTimeout reads a body of a timeout in seconds (the default when absent and not
// required), answering 400 when it is malformed or out of bounds.
func decodeTimeout(w http.ResponseWriter, r *http.Request, required bool) (time.Duration, bool) {
	var req timeoutRequest
	if !decodeBody(w, r, &req, !required) {
		return 0, false
	}
	if required && req.Timeout == nil {
		writeError(w, http.StatusBadRequest, "timeout is required")
		return 0, false
	}
	lifetime, err := timeoutOf(req.Timeout)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return 0, false
	}
	return lifetime, true
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request) {
	lifetime, ok := decodeTimeout(w, r, true)
	if !ok {
		return
	}
	id, client, claim, ok := s.claimOf(w, r)
	if !ok {
		return
	}
	if err := s.patchShutdown(r.Context(), client, id, claim.Name, time.Now().Add(lifetime)); err != nil {
		writeAPIError(w, "setting the sandbox's timeout", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// patchShutdown sets the claim's shutdown time to at, as the caller: the claim is deleted then.
func (s *Server) patchShutdown(ctx context.Context, client *sandbox.Client, id *Identity, name string, at time.Time) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"lifecycle": map[string]any{
		"shutdownTime": metav1.NewTime(at.UTC().Truncate(time.Second)), "shutdownPolicy": extensionsv1beta1.ShutdownPolicyDelete}}})
	if err != nil {
		return err
	}
	_, err = client.Clientset().ExtensionsV1beta1().SandboxClaims(id.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// Pausing and resuming change the claim's sandbox, which a claim's holder may not patch
// directly: the endpoint asks whether the caller may patch the claim, then suspends or wakes the
// Sandbox with the server's rights, as a request through sandboxclaims/exec wakes it.
const pauseVerb = "patch"

// modeTarget reads the claim of the request's {id} and its Sandbox (nil while it has none),
// once the caller may change its mode.
func (s *Server) modeTarget(w http.ResponseWriter, r *http.Request) (*Identity, *sandbox.Client, *extensionsv1beta1.SandboxClaim, *agentsv1beta1.Sandbox, bool) {
	id, client, claim, ok := s.claimOf(w, r)
	if !ok {
		return nil, nil, nil, nil, false
	}
	if err := s.authorizeClaim(r.Context(), id, pauseVerb, "", claim.Name); err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return nil, nil, nil, nil, false
	}
	sb, err := s.sandboxOf(r.Context(), claim)
	if err != nil {
		writeInternal(w, "reading the sandbox", err)
		return nil, nil, nil, nil, false
	}
	return id, client, claim, sb, true
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	_, _, claim, sb, ok := s.modeTarget(w, r)
	if !ok {
		return
	}
	if sb == nil {
		writeError(w, http.StatusConflict, fmt.Sprintf("sandbox %q has not started yet", claim.Name))
		return
	}
	if stateOf(sb) == statePaused {
		writeError(w, http.StatusConflict, fmt.Sprintf("sandbox %q is already paused", claim.Name))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.CreateTimeout)
	defer cancel()
	if err := s.setMode(ctx, claim, sb, true); err != nil {
		writeAPIError(w, "pausing the sandbox", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// setMode suspends (or wakes) sb with the server's rights and waits until it is so; the data
// plane resolves the claim anew after it.
func (s *Server) setMode(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox, suspend bool) error {
	defer s.resolved.forget(claim.Namespace, claim.Name)
	h, err := s.adminSDK.OpenSandbox(ctx, sb.Namespace, sb.Name)
	if err != nil {
		return err
	}
	if suspend {
		return h.Suspend(ctx)
	}
	return h.Resume(ctx)
}

// resume is the older resume: 409 when the sandbox runs.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) { s.wake(w, r, false, true) }

// connectV1 needs a timeout; connect (v2) defaults it.
func (s *Server) connectV1(w http.ResponseWriter, r *http.Request) { s.wake(w, r, true, false) }

func (s *Server) connect(w http.ResponseWriter, r *http.Request) { s.wake(w, r, false, false) }

// wake resumes the sandbox when paused (201) and answers it (200 when it ran); its end is moved
// to the timeout from now when that is later (E2B's connect only extends). timeoutRequired
// refuses a body without one; onlyPaused answers 409 for a running sandbox.
func (s *Server) wake(w http.ResponseWriter, r *http.Request, timeoutRequired, onlyPaused bool) {
	lifetime, ok := decodeTimeout(w, r, timeoutRequired)
	if !ok {
		return
	}
	id, client, claim, sb, ok := s.modeTarget(w, r)
	if !ok {
		return
	}
	paused := stateOf(sb) == statePaused
	if onlyPaused && !paused {
		writeError(w, http.StatusConflict, fmt.Sprintf("sandbox %q is not paused", claim.Name))
		return
	}
	end := time.Now().Add(lifetime)
	if lc := claim.Spec.Lifecycle; lc != nil && lc.ShutdownTime != nil && lc.ShutdownTime.Time.Before(end) {
		if err := s.patchShutdown(r.Context(), client, id, claim.Name, end); err != nil {
			writeAPIError(w, "extending the sandbox's timeout", err)
			return
		}
	}
	code := http.StatusOK
	if paused {
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.CreateTimeout)
		defer cancel()
		if err := s.setMode(ctx, claim, sb, false); err != nil {
			writeAPIError(w, "resuming the sandbox", err)
			return
		}
		code = http.StatusCreated
	}
	writeJSON(w, code, s.sandboxResponse(id, claim))
}

// writeInternal answers 500 for a failure of the server's own, logged.
func writeInternal(w http.ResponseWriter, what string, err error) {
	klog.ErrorS(err, "E2B endpoint: "+what)
	writeError(w, http.StatusInternalServerError, what+" failed: "+err.Error())
}

// writeAPIError answers an error of the API in E2B's terms: its status code (a validation
// error, 422, is E2B's 400) and message.
func writeAPIError(w http.ResponseWriter, what string, err error) {
	var failed *sandbox.ClaimFailedError
	if errors.As(err, &failed) {
		writeError(w, http.StatusBadRequest, what+": "+err.Error())
		return
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok && !errors.As(err, &status) {
		writeInternal(w, what, err)
		return
	}
	code := int(status.Status().Code)
	switch {
	case code == http.StatusUnprocessableEntity:
		code = http.StatusBadRequest
	case code < 400 || code > 599:
		code = http.StatusInternalServerError
	}
	writeError(w, code, what+": "+status.Status().Message)
}
