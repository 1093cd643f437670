// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// target names the sandbox a tool acts on.
type target struct {
	SandboxID string `json:"sandbox_id,omitempty" jsonschema:"the sandbox: the sandbox_id that create_sandbox or list_sandboxes returned (the name of its SandboxClaim; sandbox/NAME for a Sandbox made without a claim)"`
	// SandboxClaimName is the peer's MCP server's name of the argument.
	SandboxClaimName string `json:"sandbox_claim_name,omitempty" jsonschema:"the same as sandbox_id (the name other agent-sandbox MCP servers use)"`
	Namespace        string `json:"namespace,omitempty" jsonschema:"the Kubernetes namespace of the sandbox; leave out for the default namespace"`
}

// id is the sandbox the call names, by either argument.
func (t target) id() (string, error) {
	id, err := alias("sandbox_id", "sandbox_claim_name", t.SandboxID, t.SandboxClaimName)
	if err == nil && id == "" {
		err = errors.New("sandbox_id is required: call list_sandboxes to see the sandboxes you can use, or create_sandbox to make one")
	}
	return id, err
}

// alias is the value of an argument given by its own name or by the peer's alias for it; both
// given, they must agree.
func alias[T comparable](name, aliasName string, value, aliased T) (T, error) {
	var zero T
	switch {
	case aliased == zero:
		return value, nil
	case value == zero || value == aliased:
		return aliased, nil
	}
	return zero, fmt.Errorf("%s and %s name the same argument and disagree: give one", name, aliasName)
}

// sandboxStatus is what the tools say about a sandbox.
type sandboxStatus struct {
	SandboxID    string            `json:"sandbox_id" jsonschema:"pass this as sandbox_id to the other tools"`
	Namespace    string            `json:"namespace"`
	Kind         string            `json:"kind" jsonschema:"sandboxclaim or sandbox"`
	Ready        bool              `json:"ready" jsonschema:"whether commands, files and HTTP can reach it now"`
	Reason       string            `json:"reason,omitempty" jsonschema:"why it is (not) ready"`
	Message      string            `json:"message,omitempty"`
	Suspended    bool              `json:"suspended,omitempty"`
	Template     string            `json:"template,omitempty"`
	WarmPool     string            `json:"warm_pool,omitempty"`
	SandboxName  string            `json:"sandbox_name,omitempty" jsonschema:"the Sandbox serving the claim"`
	ShutdownTime string            `json:"shutdown_time,omitempty" jsonschema:"when the cluster deletes it (RFC 3339)"`
	Session      string            `json:"session,omitempty" jsonschema:"this MCP session, when it created the sandbox"`
	Labels       map[string]string `json:"labels,omitempty"`
	Created      string            `json:"created,omitempty"`
	uid          types.UID
}

func claimStatus(c *extensionsv1beta1.SandboxClaim) sandboxStatus {
	st := sandboxStatus{SandboxID: c.Name, Namespace: c.Namespace, Kind: string(sandbox.KindClaim), Template: c.Spec.TemplateRef.Name,
		SandboxName: c.Status.SandboxStatus.Name, Labels: c.Labels, Created: c.CreationTimestamp.UTC().Format(time.RFC3339), uid: c.UID}
	if c.Spec.WarmPoolRef != nil {
		st.WarmPool = c.Spec.WarmPoolRef.Name
	}
	if l := c.Spec.Lifecycle; l != nil && l.ShutdownTime != nil {
		st.ShutdownTime = l.ShutdownTime.UTC().Format(time.RFC3339)
	}
	st.setConditions(c.Status.Conditions)
	return st
}

func sandboxObjectStatus(s *agentsv1beta1.Sandbox) sandboxStatus {
	st := sandboxStatus{SandboxID: string(sandbox.KindSandbox) + "/" + s.Name, Namespace: s.Namespace, Kind: string(sandbox.KindSandbox),
		SandboxName: s.Name, Labels: s.Labels, Created: s.CreationTimestamp.UTC().Format(time.RFC3339)}
	st.setConditions(s.Status.Conditions)
	return st
}

func (st *sandboxStatus) setConditions(conditions []metav1.Condition) {
	if ready := meta.FindStatusCondition(conditions, string(agentsv1beta1.SandboxConditionReady)); ready != nil {
		st.Ready = ready.Status == metav1.ConditionTrue
		st.Reason, st.Message = ready.Reason, ready.Message
	}
	st.Suspended = meta.IsStatusConditionTrue(conditions, string(agentsv1beta1.SandboxConditionSuspended))
}

// status reads the sandbox behind a handle.
func status(ctx context.Context, c *caller, sb *sandbox.Sandbox) (sandboxStatus, error) {
	if sb.Kind() == sandbox.KindClaim {
		claim, err := c.client.Clientset().ExtensionsV1beta1().SandboxClaims(sb.Namespace()).Get(ctx, sb.Name(), metav1.GetOptions{})
		if err != nil {
			return sandboxStatus{}, err
		}
		return claimStatus(claim), nil
	}
	obj, err := c.client.Clientset().AgentsV1beta1().Sandboxes(sb.Namespace()).Get(ctx, sb.Name(), metav1.GetOptions{})
	if err != nil {
		return sandboxStatus{}, err
	}
	return sandboxObjectStatus(obj), nil
}

// open resolves the caller and the sandbox a call names.
func (s *Server) open(ctx context.Context, req mcp.Request, t target) (*caller, *sandbox.Sandbox, error) {
	c, err := s.callerOf(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	id, err := t.id()
	if err != nil {
		return nil, nil, err
	}
	sb, err := c.client.Open(ctx, c.ns(t.Namespace), id)
	if err != nil {
		return nil, nil, explain(fmt.Sprintf("opening sandbox %q in namespace %s", id, c.ns(t.Namespace)), err)
	}
	return c, sb, nil
}

func (c *caller) ns(namespace string) string {
	if namespace != "" {
		return namespace
	}
	return c.namespace
}

func boolPtr(b bool) *bool { return &b }

func (s *Server) addTools(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "create_sandbox", Description: `Create a sandbox (an isolated machine to run code in) and wait until it is ready.
Give template_name (a SandboxTemplate) or warm_pool (a SandboxWarmPool, the fastest: its sandboxes are already running); list_templates shows both.
Returns sandbox_id, which every other tool takes. The sandbox is deleted by the cluster at its shutdown time (by default an hour from now; shutdown_after_seconds changes it) or by delete_sandbox.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)}}, s.createSandbox)
	mcp.AddTool(server, &mcp.Tool{Name: "delete_sandbox", Description: "Delete a sandbox and everything in it. Deleting one already gone is not an error.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)}}, s.deleteSandbox)
	mcp.AddTool(server, &mcp.Tool{Name: "execute_command", Description: `Run a shell command in a sandbox (with /bin/sh -c, in the sandbox's working directory) and return its exit code, stdout and stderr.
A non-zero exit code is a normal result, not an error. Output beyond the server's limit (64 KiB each by default) keeps its beginning and end, with stdout_truncated or stderr_truncated set: redirect long output to a file and read parts of it.
The command is stopped after timeout_seconds (60 by default) and timed_out set; for long jobs, start them in the background (nohup ... &) and poll.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)}}, s.executeCommand)
	mcp.AddTool(server, &mcp.Tool{Name: "upload_file", Description: `Write a file in a sandbox, creating its parent directories and replacing the file if it exists.
content is text (encoding "text", the default) or base64 (encoding "base64") for binary data. Files are limited to 1 MiB by default: split larger data and append parts with execute_command.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)}}, s.uploadFile)
	mcp.AddTool(server, &mcp.Tool{Name: "download_file", Description: `Read a file of a sandbox. With encoding "auto" (the default) text comes back as text and anything else as base64 (the result's encoding says which).
Files are limited to 1 MiB by default: read parts of larger ones with execute_command (head -c, tail -c).`,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}}, s.downloadFile)
	mcp.AddTool(server, &mcp.Tool{Name: "list_files", Description: `List a directory of a sandbox (not recursively): name, type, size, mode and modification time of each entry, sorted by name.
At most 1,000 entries by default come back, with truncated set when there were more: list subdirectories or use execute_command with find to narrow down.`,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}}, s.listFiles)
	mcp.AddTool(server, &mcp.Tool{Name: "file_exists", Description: "Say whether a path exists in a sandbox, and whether it is a file, a directory or something else.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}}, s.fileExists)
	mcp.AddTool(server, &mcp.Tool{Name: "http_request", Description: `Send an HTTP request to a port of a sandbox (a server running in it), through the Kubernetes API server's proxy, and return the response.
A suspended sandbox is woken by the request. The response body is limited to 1 MiB by default (body_truncated says it was cut); text comes back as text, anything else as base64.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)}}, s.httpRequest)
	mcp.AddTool(server, &mcp.Tool{Name: "get_sandbox_status", Description: "Say whether a sandbox is ready or suspended, why not when it is not, what it was made from and when it shuts down.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}}, s.getSandboxStatus)
	mcp.AddTool(server, &mcp.Tool{Name: "list_sandboxes", Description: `List the sandboxes of a namespace that the caller may see: sandbox claims (what create_sandbox makes) and sandboxes made without a claim.
this_session_only keeps those this MCP session created. At most 1,000 come back, with truncated set when there were more.`,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}}, s.listSandboxes)
	mcp.AddTool(server, &mcp.Tool{Name: "list_templates", Description: "List the sandbox templates and warm pools of a namespace: what create_sandbox's template_name and warm_pool may name.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}}, s.listTemplates)
	mcp.AddTool(server, &mcp.Tool{Name: "suspend_sandbox", Description: `Suspend a sandbox: stop its machine, keeping its volumes, so it costs nothing while idle; resume_sandbox or an http_request starts it again.
Files outside its volumes and running processes are lost. Needs the patch right on sandboxes (a claim-only user's sandboxes are suspended by their idle timeout instead).`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)}}, s.suspendSandbox)
	mcp.AddTool(server, &mcp.Tool{Name: "resume_sandbox", Description: "Start a suspended sandbox again and wait until it is ready. Needs the patch right on sandboxes.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)}}, s.resumeSandbox)
}

type createSandboxInput struct {
	TemplateName         string            `json:"template_name,omitempty" jsonschema:"the SandboxTemplate to make the sandbox from; give this or warm_pool"`
	WarmPool             string            `json:"warm_pool,omitempty" jsonschema:"the SandboxWarmPool to take an already running sandbox from; give this or template_name"`
	Namespace            string            `json:"namespace,omitempty" jsonschema:"the Kubernetes namespace; leave out for the default namespace"`
	Name                 string            `json:"name,omitempty" jsonschema:"a name for the sandbox (a DNS label); leave out to have one generated"`
	Labels               map[string]string `json:"labels,omitempty" jsonschema:"labels for the sandbox claim"`
	PodLabels            map[string]string `json:"pod_labels,omitempty" jsonschema:"labels for the sandbox's pod (the template must allow them)"`
	PodAnnotations       map[string]string `json:"pod_annotations,omitempty" jsonschema:"annotations for the sandbox's pod (the template must allow them)"`
	ShutdownAfterSeconds float64           `json:"shutdown_after_seconds,omitempty" jsonschema:"delete the sandbox this many seconds from now; leave out for the server's default (an hour)"`
	TimeoutSeconds       float64           `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the sandbox to become ready (60 by default)"`
	// The peer's MCP server's names of warm_pool and timeout_seconds.
	WarmPoolAlias       string  `json:"warmpool,omitempty" jsonschema:"the same as warm_pool"`
	SandboxReadyTimeout float64 `json:"sandbox_ready_timeout,omitempty" jsonschema:"the same as timeout_seconds"`
}

func (s *Server) createSandbox(ctx context.Context, req *mcp.CallToolRequest, in createSandboxInput) (*mcp.CallToolResult, sandboxStatus, error) {
	var err error
	if in.WarmPool, err = alias("warm_pool", "warmpool", in.WarmPool, in.WarmPoolAlias); err != nil {
		return nil, sandboxStatus{}, err
	}
	if in.TimeoutSeconds, err = alias("timeout_seconds", "sandbox_ready_timeout", in.TimeoutSeconds, in.SandboxReadyTimeout); err != nil {
		return nil, sandboxStatus{}, err
	}
	var source sandbox.Source
	switch {
	case (in.TemplateName == "") == (in.WarmPool == ""):
		return nil, sandboxStatus{}, errors.New("give exactly one of template_name and warm_pool: call list_templates to see both")
	case in.WarmPool != "":
		source = sandbox.FromPool(in.WarmPool)
	default:
		source = sandbox.FromTemplate(in.TemplateName)
	}
	lifetime := s.opts.ClaimLifetime
	if in.ShutdownAfterSeconds < 0 {
		return nil, sandboxStatus{}, errors.New("shutdown_after_seconds must be positive")
	} else if in.ShutdownAfterSeconds > 0 {
		lifetime = time.Duration(in.ShutdownAfterSeconds * float64(time.Second))
		if lifetime > s.opts.MaxClaimLifetime {
			return nil, sandboxStatus{}, fmt.Errorf("shutdown_after_seconds is over this server's limit of %v seconds", s.opts.MaxClaimLifetime.Seconds())
		}
	}
	wait, err := s.timeout(in.TimeoutSeconds)
	if err != nil {
		return nil, sandboxStatus{}, err
	}
	c, err := s.callerOf(ctx, req)
	if err != nil {
		return nil, sandboxStatus{}, err
	}
	labels := maps.Clone(in.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[SessionLabel] = c.session
	opts := []sandbox.ClaimOption{sandbox.WithLabels(labels), sandbox.WithShutdownTime(time.Now().Add(lifetime)),
		sandbox.WithPodMetadata(in.PodLabels, in.PodAnnotations)}
	if in.Name != "" {
		opts = append(opts, sandbox.WithName(in.Name))
	}
	ns := c.ns(in.Namespace)
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// Claim deletes the claim again when it does not become ready in time.
	sb, err := c.client.Claim(waitCtx, ns, source, opts...)
	if err != nil {
		return nil, sandboxStatus{}, explain(fmt.Sprintf("creating a sandbox from %s in namespace %s", source, ns), err)
	}
	st, err := status(ctx, c, sb)
	if err != nil {
		return nil, sandboxStatus{}, explain("reading the new sandbox "+sb.Name(), err)
	}
	// What this session made is what this server remembers making, by UID: a label on a claim
	// is anyone's to write who may create claims in the namespace.
	s.created.add(c.session, st.uid)
	st.Session = c.session
	return nil, st, nil
}

type deleteResult struct {
	SandboxID string `json:"sandbox_id"`
	Namespace string `json:"namespace"`
	Deleted   bool   `json:"deleted"`
}

func (s *Server) deleteSandbox(ctx context.Context, req *mcp.CallToolRequest, in target) (*mcp.CallToolResult, deleteResult, error) {
	c, err := s.callerOf(ctx, req)
	if err != nil {
		return nil, deleteResult{}, err
	}
	id, err := in.id()
	if err != nil {
		return nil, deleteResult{}, err
	}
	ns := c.ns(in.Namespace)
	sb, err := c.client.Open(ctx, ns, id)
	if apierrors.IsNotFound(err) {
		return nil, deleteResult{SandboxID: id, Namespace: ns, Deleted: true}, nil
	}
	if err != nil {
		return nil, deleteResult{}, explain("deleting sandbox "+id, err)
	}
	if err := sb.Close(ctx); err != nil {
		return nil, deleteResult{}, explain("deleting sandbox "+id, err)
	}
	return nil, deleteResult{SandboxID: id, Namespace: ns, Deleted: true}, nil
}

type executeCommandInput struct {
	target
	Command        string  `json:"command" jsonschema:"the shell command line, run with /bin/sh -c (pipes, redirections and && work)"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"stop the command after this many seconds (60 by default)"`
	Timeout        float64 `json:"timeout,omitempty" jsonschema:"the same as timeout_seconds"`
}

type executeCommandResult struct {
	ExitCode        int    `json:"exit_code" jsonschema:"the command's exit code; -1 when it timed out"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty" jsonschema:"stdout was longer than the limit: its middle was left out"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty" jsonschema:"stderr was longer than the limit: its middle was left out"`
	TimedOut        bool   `json:"timed_out,omitempty"`
}

func (s *Server) executeCommand(ctx context.Context, req *mcp.CallToolRequest, in executeCommandInput) (*mcp.CallToolResult, executeCommandResult, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, executeCommandResult{}, errors.New("command is required")
	}
	seconds, err := alias("timeout_seconds", "timeout", in.TimeoutSeconds, in.Timeout)
	if err != nil {
		return nil, executeCommandResult{}, err
	}
	timeout, err := s.timeout(seconds)
	if err != nil {
		return nil, executeCommandResult{}, err
	}
	_, sb, err := s.open(ctx, req, in.target)
	if err != nil {
		return nil, executeCommandResult{}, err
	}
	stdout, stderr := newHeadTailBuffer(s.opts.MaxOutputBytes), newHeadTailBuffer(s.opts.MaxOutputBytes)
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = sb.Exec(runCtx, sandbox.ExecOptions{Command: []string{"/bin/sh", "-c", in.Command}, Stdout: stdout, Stderr: stderr})
	res := executeCommandResult{ExitCode: sandbox.ExitCode(err), Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.Truncated(), StderrTruncated: stderr.Truncated()}
	if res.ExitCode < 0 {
		if runCtx.Err() != nil && ctx.Err() == nil {
			res.TimedOut = true
			return nil, res, nil
		}
		return nil, executeCommandResult{}, explain("running the command in "+sb.String(), err)
	}
	return nil, res, nil
}

type uploadFileInput struct {
	target
	Path     string `json:"path" jsonschema:"the file's path in the sandbox (absolute, or relative to the sandbox's working directory)"`
	Content  string `json:"content" jsonschema:"the file's contents: text, or base64 when encoding is base64"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (the default) or base64"`
	Binary   bool   `json:"binary,omitempty" jsonschema:"true: content is base64 (the same as encoding base64)"`
}

// binaryEncoding is the encoding an encoding argument and the peer's binary flag ask for.
func binaryEncoding(encoding string, binary bool) (string, error) {
	if !binary {
		return encoding, nil
	}
	return alias("encoding", "binary", encoding, encodingBase64)
}

type fileResult struct {
	Path string `json:"path"`
	Size int    `json:"size" jsonschema:"bytes"`
}

func (s *Server) uploadFile(ctx context.Context, req *mcp.CallToolRequest, in uploadFileInput) (*mcp.CallToolResult, fileResult, error) {
	if in.Path == "" {
		return nil, fileResult{}, errors.New("path is required")
	}
	encoding, err := binaryEncoding(in.Encoding, in.Binary)
	if err != nil {
		return nil, fileResult{}, err
	}
	data, err := decodeContent(in.Content, encoding)
	if err != nil {
		return nil, fileResult{}, err
	}
	if len(data) > s.opts.MaxFileBytes {
		return nil, fileResult{}, fmt.Errorf("the file has %d bytes, over this server's limit of %d: write it in parts (upload_file part files, then execute_command with cat to join them)", len(data), s.opts.MaxFileBytes)
	}
	_, sb, err := s.open(ctx, req, in.target)
	if err != nil {
		return nil, fileResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DefaultTimeout)
	defer cancel()
	if dir := path.Dir(in.Path); dir != "." && dir != "/" {
		res, err := sb.Run(ctx, "mkdir", "-p", "--", dir)
		if err != nil {
			return nil, fileResult{}, explain("creating directory "+dir, err)
		}
		if res.ExitCode != 0 {
			return nil, fileResult{}, fmt.Errorf("creating directory %s: %s", dir, strings.TrimSpace(res.Stderr))
		}
	}
	if err := sb.WriteFile(ctx, in.Path, bytes.NewReader(data), int64(len(data)), 0o644); err != nil {
		return nil, fileResult{}, explain("writing "+in.Path, err)
	}
	return nil, fileResult{Path: in.Path, Size: len(data)}, nil
}

type downloadFileInput struct {
	target
	Path     string `json:"path" jsonschema:"the file's path in the sandbox"`
	Encoding string `json:"encoding,omitempty" jsonschema:"auto (the default: text when it is valid UTF-8, else base64), text or base64"`
	Binary   bool   `json:"binary,omitempty" jsonschema:"true: return the content as base64 (the same as encoding base64)"`
}

type downloadFileResult struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding" jsonschema:"text or base64: how content is written"`
	Size     int    `json:"size" jsonschema:"bytes"`
}

func (s *Server) downloadFile(ctx context.Context, req *mcp.CallToolRequest, in downloadFileInput) (*mcp.CallToolResult, downloadFileResult, error) {
	if in.Path == "" {
		return nil, downloadFileResult{}, errors.New("path is required")
	}
	_, sb, err := s.open(ctx, req, in.target)
	if err != nil {
		return nil, downloadFileResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DefaultTimeout)
	defer cancel()
	r, err := sb.ReadFile(ctx, in.Path)
	if err != nil {
		return nil, downloadFileResult{}, explain("reading "+in.Path+" (file_exists and list_files show what is there)", err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, int64(s.opts.MaxFileBytes)+1))
	if err != nil {
		return nil, downloadFileResult{}, explain("reading "+in.Path, err)
	}
	if len(data) > s.opts.MaxFileBytes {
		return nil, downloadFileResult{}, fmt.Errorf("%s is larger than this server's limit of %d bytes: read parts of it with execute_command (head -c, tail -c, or split and download the parts)", in.Path, s.opts.MaxFileBytes)
	}
	asked, err := binaryEncoding(in.Encoding, in.Binary)
	if err != nil {
		return nil, downloadFileResult{}, err
	}
	content, encoding, err := encodeContent(data, asked)
	if err != nil {
		return nil, downloadFileResult{}, fmt.Errorf("%s: %w", in.Path, err)
	}
	return nil, downloadFileResult{Path: in.Path, Content: content, Encoding: encoding, Size: len(data)}, nil
}

type pathInput struct {
	target
	Path string `json:"path" jsonschema:"a path in the sandbox"`
}

type fileEntry struct {
	Name     string `json:"name"`
	Type     string `json:"type" jsonschema:"file, directory, symlink or other"`
	Size     int64  `json:"size"`
	Mode     string `json:"mode" jsonschema:"permissions, as ls shows them"`
	Modified string `json:"modified" jsonschema:"RFC 3339"`
}

type listFilesResult struct {
	Path      string      `json:"path"`
	Entries   []fileEntry `json:"entries"`
	Total     int         `json:"total" jsonschema:"how many entries the directory has"`
	Truncated bool        `json:"truncated" jsonschema:"more entries exist than came back"`
}

func fileType(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "directory"
	case mode&fs.ModeSymlink != 0:
		return "symlink"
	case mode.IsRegular():
		return "file"
	}
	return "other"
}

type listFilesInput struct {
	pathInput
	MaxEntries int `json:"max_entries,omitempty" jsonschema:"return at most this many entries (the server's limit, 1000 by default, when left out or larger)"`
}

func (s *Server) listFiles(ctx context.Context, req *mcp.CallToolRequest, in listFilesInput) (*mcp.CallToolResult, listFilesResult, error) {
	if in.Path == "" {
		in.Path = "."
	}
	limit := s.opts.MaxListEntries
	if in.MaxEntries < 0 {
		return nil, listFilesResult{}, errors.New("max_entries must be positive")
	} else if in.MaxEntries > 0 {
		limit = min(limit, in.MaxEntries)
	}
	_, sb, err := s.open(ctx, req, in.target)
	if err != nil {
		return nil, listFilesResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DefaultTimeout)
	defer cancel()
	files, err := sb.ListFiles(ctx, in.Path)
	if err != nil {
		return nil, listFilesResult{}, explain("listing "+in.Path, err)
	}
	slices.SortFunc(files, func(a, b sandbox.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	kept, truncated := capEntries(files, limit)
	res := listFilesResult{Path: in.Path, Entries: make([]fileEntry, 0, len(kept)), Total: len(files), Truncated: truncated}
	for _, f := range kept {
		res.Entries = append(res.Entries, fileEntry{Name: f.Name, Type: fileType(f.Mode), Size: f.Size, Mode: f.Mode.String(), Modified: f.ModTime.UTC().Format(time.RFC3339)})
	}
	return nil, res, nil
}

type fileExistsResult struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	Type   string `json:"type,omitempty" jsonschema:"file, directory, symlink or other, when it exists"`
}

func (s *Server) fileExists(ctx context.Context, req *mcp.CallToolRequest, in pathInput) (*mcp.CallToolResult, fileExistsResult, error) {
	if in.Path == "" {
		return nil, fileExistsResult{}, errors.New("path is required")
	}
	_, sb, err := s.open(ctx, req, in.target)
	if err != nil {
		return nil, fileExistsResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DefaultTimeout)
	defer cancel()
	// %f: the raw mode in hex, as ListFiles reads it; -L is not given, so a link is a link.
	res, err := sb.Run(ctx, "stat", "-c", "%F", "--", in.Path)
	if err != nil {
		return nil, fileExistsResult{}, explain("checking "+in.Path, err)
	}
	if res.ExitCode != 0 {
		return nil, fileExistsResult{Path: in.Path}, nil
	}
	kind := strings.TrimSpace(res.Stdout)
	switch {
	case kind == "directory":
	case kind == "symbolic link":
		kind = "symlink"
	case strings.Contains(kind, "regular"):
		kind = "file"
	default:
		kind = "other"
	}
	return nil, fileExistsResult{Path: in.Path, Exists: true, Type: kind}, nil
}

type httpRequestInput struct {
	target
	Port           int               `json:"port,omitempty" jsonschema:"the sandbox's port; leave out for the first port its pod declares"`
	Path           string            `json:"path,omitempty" jsonschema:"the request's path and query, e.g. /api/items?limit=5 (/ by default)"`
	Method         string            `json:"method,omitempty" jsonschema:"GET (the default), POST, PUT, PATCH, DELETE, HEAD or OPTIONS"`
	Headers        map[string]string `json:"headers,omitempty" jsonschema:"request headers (credentials for the cluster are never forwarded)"`
	Body           string            `json:"body,omitempty" jsonschema:"the request body: text, or base64 when body_encoding is base64"`
	BodyEncoding   string            `json:"body_encoding,omitempty" jsonschema:"text (the default) or base64"`
	TimeoutSeconds float64           `json:"timeout_seconds,omitempty" jsonschema:"give up after this many seconds (60 by default)"`
	Timeout        float64           `json:"timeout,omitempty" jsonschema:"the same as timeout_seconds"`
}

type httpRequestResult struct {
	StatusCode    int               `json:"status_code"`
	Headers       map[string]string `json:"headers"`
	Body          string            `json:"body"`
	BodyEncoding  string            `json:"body_encoding" jsonschema:"text or base64: how body is written"`
	BodyTruncated bool              `json:"body_truncated,omitempty" jsonschema:"the body was longer than the limit and was cut"`
}

func (s *Server) httpRequest(ctx context.Context, req *mcp.CallToolRequest, in httpRequestInput) (*mcp.CallToolResult, httpRequestResult, error) {
	method := strings.ToUpper(in.Method)
	if method == "" {
		method = http.MethodGet
	}
	if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}, method) {
		return nil, httpRequestResult{}, fmt.Errorf("method %q is not one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS", in.Method)
	}
	if in.Port < 0 || in.Port > 65535 {
		return nil, httpRequestResult{}, fmt.Errorf("port %d is not a TCP port", in.Port)
	}
	body, err := decodeContent(in.Body, in.BodyEncoding)
	if err != nil {
		return nil, httpRequestResult{}, fmt.Errorf("body: %w", err)
	}
	if len(body) > s.opts.MaxFileBytes {
		return nil, httpRequestResult{}, fmt.Errorf("the body has %d bytes, over this server's limit of %d", len(body), s.opts.MaxFileBytes)
	}
	seconds, err := alias("timeout_seconds", "timeout", in.TimeoutSeconds, in.Timeout)
	if err != nil {
		return nil, httpRequestResult{}, err
	}
	timeout, err := s.timeout(seconds)
	if err != nil {
		return nil, httpRequestResult{}, err
	}
	_, sb, err := s.open(ctx, req, in.target)
	if err != nil {
		return nil, httpRequestResult{}, err
	}
	port := ""
	if in.Port != 0 {
		port = strconv.Itoa(in.Port)
	}
	client, err := sb.HTTPClient(port)
	if err != nil {
		return nil, httpRequestResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reqPath := "/" + strings.TrimPrefix(in.Path, "/")
	httpReq, err := http.NewRequestWithContext(ctx, method, "http://sandbox"+reqPath, bytes.NewReader(body))
	if err != nil {
		return nil, httpRequestResult{}, fmt.Errorf("path %q: %w", in.Path, err)
	}
	for k, v := range in.Headers {
		httpReq.Header.Set(k, v)
	}
	resp, err := client.Do(httpReq)
	if err != nil {
		return nil, httpRequestResult{}, explain(fmt.Sprintf("%s %s on %s", method, reqPath, sb), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(s.opts.MaxFileBytes)+1))
	if err != nil {
		return nil, httpRequestResult{}, fmt.Errorf("reading the response of %s %s: %w", method, reqPath, err)
	}
	res := httpRequestResult{StatusCode: resp.StatusCode, Headers: map[string]string{}}
	if len(data) > s.opts.MaxFileBytes {
		data, res.BodyTruncated = data[:s.opts.MaxFileBytes], true
	}
	for k := range resp.Header {
		res.Headers[k] = resp.Header.Get(k)
	}
	res.Body, res.BodyEncoding, _ = encodeContent(data, "auto")
	return nil, res, nil
}

func (s *Server) getSandboxStatus(ctx context.Context, req *mcp.CallToolRequest, in target) (*mcp.CallToolResult, sandboxStatus, error) {
	c, sb, err := s.open(ctx, req, in)
	if err != nil {
		return nil, sandboxStatus{}, err
	}
	st, err := status(ctx, c, sb)
	return nil, st, explain("reading "+sb.String(), err)
}

type listSandboxesInput struct {
	Namespace       string `json:"namespace,omitempty" jsonschema:"the Kubernetes namespace; leave out for the default namespace"`
	ThisSessionOnly bool   `json:"this_session_only,omitempty" jsonschema:"list only the sandboxes this MCP session created"`
}

type listSandboxesResult struct {
	Namespace string          `json:"namespace"`
	Sandboxes []sandboxStatus `json:"sandboxes"`
	Truncated bool            `json:"truncated" jsonschema:"more exist than came back"`
	Note      string          `json:"note,omitempty"`
}

func (s *Server) listSandboxes(ctx context.Context, req *mcp.CallToolRequest, in listSandboxesInput) (*mcp.CallToolResult, listSandboxesResult, error) {
	c, err := s.callerOf(ctx, req)
	if err != nil {
		return nil, listSandboxesResult{}, err
	}
	res, err := s.sandboxesOf(ctx, c, c.ns(in.Namespace), in.ThisSessionOnly)
	return nil, res, err
}

// sandboxesOf lists the claims of namespace and the sandboxes made there without one (a
// sandbox with an owner is reached through its claim, or belongs to a warm pool).
func (s *Server) sandboxesOf(ctx context.Context, c *caller, ns string, thisSession bool) (listSandboxesResult, error) {
	res := listSandboxesResult{Namespace: ns, Sandboxes: []sandboxStatus{}}
	// The session's own claims are those this server made in it (by UID), whatever labels claims
	// carry; they are at most a session's bound, so the list is not cut short for them.
	opts := metav1.ListOptions{Limit: int64(s.opts.MaxListEntries) + 1}
	if thisSession {
		opts.Limit = 0
	}
	claims, err := c.client.Clientset().ExtensionsV1beta1().SandboxClaims(ns).List(ctx, opts)
	if err != nil {
		return res, explain("listing the sandbox claims of namespace "+ns, err)
	}
	for i := range claims.Items {
		st := claimStatus(&claims.Items[i])
		mine := s.created.has(c.session, st.uid)
		if mine {
			st.Session = c.session
		}
		if mine || !thisSession {
			res.Sandboxes = append(res.Sandboxes, st)
		}
	}
	if !thisSession {
		sandboxes, err := c.client.Clientset().AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{Limit: int64(s.opts.MaxListEntries) + 1})
		switch {
		case apierrors.IsForbidden(err):
			res.Note = "sandboxes made without a claim are not listed: the caller may not list sandboxes in this namespace"
		case err != nil:
			return res, explain("listing the sandboxes of namespace "+ns, err)
		default:
			for i := range sandboxes.Items {
				if len(sandboxes.Items[i].OwnerReferences) == 0 {
					res.Sandboxes = append(res.Sandboxes, sandboxObjectStatus(&sandboxes.Items[i]))
				}
			}
			res.Truncated = sandboxes.Continue != ""
		}
	}
	res.Truncated = res.Truncated || claims.Continue != ""
	var cut bool
	res.Sandboxes, cut = capEntries(res.Sandboxes, s.opts.MaxListEntries)
	res.Truncated = res.Truncated || cut
	return res, nil
}

type namespaceInput struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the Kubernetes namespace; leave out for the default namespace"`
}

type warmPool struct {
	Name          string `json:"name"`
	Template      string `json:"template"`
	ReadyReplicas int32  `json:"ready_replicas" jsonschema:"sandboxes ready to be taken now"`
}

type listTemplatesResult struct {
	Namespace string     `json:"namespace"`
	Templates []string   `json:"templates" jsonschema:"names for create_sandbox's template_name"`
	WarmPools []warmPool `json:"warm_pools" jsonschema:"names for create_sandbox's warm_pool"`
}

func (s *Server) listTemplates(ctx context.Context, req *mcp.CallToolRequest, in namespaceInput) (*mcp.CallToolResult, listTemplatesResult, error) {
	c, err := s.callerOf(ctx, req)
	if err != nil {
		return nil, listTemplatesResult{}, err
	}
	ns := c.ns(in.Namespace)
	res := listTemplatesResult{Namespace: ns, Templates: []string{}, WarmPools: []warmPool{}}
	opts := metav1.ListOptions{Limit: int64(s.opts.MaxListEntries)}
	// A cluster that cannot be reached or refuses the list is an error, not an empty namespace.
	templates, err := c.client.Clientset().ExtensionsV1beta1().SandboxTemplates(ns).List(ctx, opts)
	if err != nil {
		return nil, listTemplatesResult{}, explain("listing the templates of namespace "+ns, err)
	}
	for _, t := range templates.Items {
		res.Templates = append(res.Templates, t.Name)
	}
	pools, err := c.client.Clientset().ExtensionsV1beta1().SandboxWarmPools(ns).List(ctx, opts)
	if err != nil {
		return nil, listTemplatesResult{}, explain("listing the warm pools of namespace "+ns, err)
	}
	for _, p := range pools.Items {
		res.WarmPools = append(res.WarmPools, warmPool{Name: p.Name, Template: p.Spec.TemplateRef.Name, ReadyReplicas: p.Status.ReadyReplicas})
	}
	return nil, res, nil
}

type lifecycleInput struct {
	target
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"how long to wait (60 by default)"`
	Timeout        float64 `json:"timeout,omitempty" jsonschema:"the same as timeout_seconds"`
}

func (s *Server) suspendSandbox(ctx context.Context, req *mcp.CallToolRequest, in lifecycleInput) (*mcp.CallToolResult, sandboxStatus, error) {
	return s.setMode(ctx, req, in, "suspending", (*sandbox.Sandbox).Suspend)
}

func (s *Server) resumeSandbox(ctx context.Context, req *mcp.CallToolRequest, in lifecycleInput) (*mcp.CallToolResult, sandboxStatus, error) {
	return s.setMode(ctx, req, in, "resuming", (*sandbox.Sandbox).Resume)
}

func (s *Server) setMode(ctx context.Context, req *mcp.CallToolRequest, in lifecycleInput, what string, set func(*sandbox.Sandbox, context.Context) error) (*mcp.CallToolResult, sandboxStatus, error) {
	seconds, err := alias("timeout_seconds", "timeout", in.TimeoutSeconds, in.Timeout)
	if err != nil {
		return nil, sandboxStatus{}, err
	}
	timeout, err := s.timeout(seconds)
	if err != nil {
		return nil, sandboxStatus{}, err
	}
	c, sb, err := s.open(ctx, req, in.target)
	if err != nil {
		return nil, sandboxStatus{}, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := set(sb, waitCtx); err != nil {
		return nil, sandboxStatus{}, explain(what+" "+sb.String(), err)
	}
	st, err := status(ctx, c, sb)
	return nil, st, explain("reading "+sb.String(), err)
}
