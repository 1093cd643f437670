// Package envd serves E2B's in-sandbox daemon API (envd) from inside sandbox-apiserver: the
// process and filesystem Connect services, /files and /health. Nothing runs in the sandbox's pod
// but what the caller asked for: every operation is a pods/exec stream (client-go's
// remotecommand) into the sandbox's container running a POSIX shell script, so any image with
// /bin/sh and coreutils or busybox works.
//
// The wire format is Connect with JSON only: the E2B JS SDK's transport is connect-web with
// useBinaryFormat false, so it never sends protobuf's binary encoding. A small hand-written
// codec (connect.go) and plain Go structs in protobuf's JSON mapping (messages.go), written from
// the schemas the SDK embeds, serve that without a protobuf toolchain or generated code.
//
// What a caller can count on:
//   - A command runs as the container's own user, with the container's environment, the claim's
//     spec.env and the request's envs (the request's win), in the user's home unless cwd says
//     otherwise. The SDK's user option runs it as that user: as is when the container already
//     runs as them, through su when it runs as root, refused otherwise.
//   - A process is kept by the server that started it, which holds its exec stream: it outlives
//     the Start request (background commands, disconnects) and is found by its pid (or tag) for
//     Connect, List, SendInput, CloseStdin, Update and SendSignal. A signal goes to the process
//     and all its descendants. A restart of the server drops its streams: the commands go on
//     in the container but are no longer listed. Output is not buffered for later connects.
//     With several replicas, a sandbox's data-plane requests must reach the same one (affinity
//     on the E2b-Sandbox-Id header) for a process to be found again.
//   - Relative paths are relative to the user's home (and "~/" is expanded). Uploads land in a
//     temporary file moved into place once complete, so a refused or cut upload changes nothing.
//   - The image needs /bin/sh with stat, find, cat, mkdir, mv, rm and kill (coreutils or busybox);
//     /bin/bash, which the SDK asks for, falls back to /bin/sh when absent.
//
// Version is the envd version the SDK is told; it gates the SDK's features on it, so it is the
// newest version whose features are all served here (0.5.7: closeStdin, octet-stream and gzip
// uploads). Directory watching is answered "unimplemented"; file metadata (0.6.2) is not
// reached, as the SDK refuses it for this version itself.
package envd

import (
	"errors"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Sandbox is one resolved, authorized sandbox container a data-plane request is for.
type Sandbox struct {
	// ID is the E2B sandbox ID the caller used; processes are kept per ID.
	ID                        string
	Namespace, Pod, Container string
	// Env is the claim's own spec.env for this container (name -> value); every process started
	// gets it, under the request's own envs.
	Env map[string]string
	// Key identifies the caller (the API key's identity) for per-key limits.
	Key string
}

// Resolver authenticates and authorizes a data-plane request (E2b-Sandbox-Id header or host,
// X-Access-Token header) and answers the sandbox, or an error to send. An error wrapping a
// *StatusError is sent with its status and message; any other error is a 500.
type Resolver interface {
	Resolve(r *http.Request) (*Sandbox, error)
}

// StatusError is a Resolver's refusal: 404 for a sandbox of another tenant (as if absent), 401
// for a bad or missing token, 403 when the identity may not exec.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// Config of the handler. Zero limits take the defaults below.
type Config struct {
	Resolver Resolver
	// RESTConfig and Client reach the cluster API with the server's own rights: pods/exec on the
	// sandbox's pod only, after Resolver authorized the caller.
	RESTConfig *rest.Config
	Client     kubernetes.Interface

	// MaxProcessesPerSandbox bounds the processes (and so exec streams) kept running per sandbox.
	MaxProcessesPerSandbox int
	// MaxProcessesPerKey bounds them per caller key over all its sandboxes.
	MaxProcessesPerKey int
	// MaxStreamsPerSandbox bounds the streaming requests and short exec streams (filesystem
	// calls, file transfers) open at once per sandbox.
	MaxStreamsPerSandbox int
	// MaxStreamsPerKey bounds them per caller key.
	MaxStreamsPerKey int
	// MaxUploadBytes bounds one /files upload body.
	MaxUploadBytes int64
}

// Defaults of Config's limits.
const (
	DefaultMaxProcessesPerSandbox = 32
	DefaultMaxProcessesPerKey     = 128
	DefaultMaxStreamsPerSandbox   = 64
	DefaultMaxStreamsPerKey       = 256
	DefaultMaxUploadBytes         = 100 << 20
)

// Version is the envd version the data plane implements; the control plane reports it as the
// sandbox's envdVersion so the SDK uses exactly the features served here.
const Version = "0.5.7"

// NewHandler serves everything of the data plane: /health, /files, the Connect services. The
// request must carry the sandbox's identity for cfg.Resolver; the caller routes to it.
func NewHandler(cfg Config) http.Handler {
	return newServer(cfg)
}

// statusOf answers the HTTP status and message of a Resolver's error.
func statusOf(err error) (int, string) {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code, se.Message
	}
	return http.StatusInternalServerError, err.Error()
}
