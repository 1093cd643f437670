// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package podexec runs one command in a container of a pod the caller controls, through the
// cluster's pods/exec, with the server's own rights: for the server's own work on the pods it
// made (a claim's env delivered to a warm sandbox), never on a tenant's behalf.
package podexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// MaxOutput bounds what is kept of a command's output, for the error that reports its failure.
const MaxOutput = 1024

// Runner runs commands in pods through kube-apiserver.
type Runner struct {
	config *rest.Config
	client kubernetes.Interface
}

// New returns a Runner reaching the cluster with client, and with config for the exec streams.
func New(config *rest.Config, client kubernetes.Interface) *Runner {
	return &Runner{config: config, client: client}
}

// Run runs command in container of the pod namespace/name with stdin, after checking that the
// pod is controlled by the object of UID controller and that the container runs. It returns nil
// when the command exited 0; otherwise an error carrying the exit code and the start of its output.
func (r *Runner) Run(ctx context.Context, namespace, name string, controller types.UID, container string, command []string, stdin []byte) error {
	pod, err := r.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref == nil || ref.UID != controller {
		return fmt.Errorf("pod %s/%s is not controlled by the sandbox", namespace, name)
	}
	if !running(pod, container) {
		return fmt.Errorf("container %s of pod %s/%s is not running", container, namespace, name)
	}
	req := r.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: command, Stdin: true, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec)
	exec, err := Executor(r.config, req.URL())
	if err != nil {
		return err
	}
	out := &boundedBuffer{max: MaxOutput}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(stdin), Stdout: out, Stderr: out})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	var coded interface{ ExitStatus() int }
	if errors.As(err, &coded) {
		return &ExitError{Code: coded.ExitStatus(), Output: out.String()}
	}
	if o := out.String(); o != "" {
		return fmt.Errorf("%w (output: %q)", err, o)
	}
	return err
}

// Executor streams the exec (or attach) at u over WebSocket (the v5 channel protocol) and falls
// back to SPDY for a server or proxy that cannot upgrade to it, as kubectl does.
func Executor(config *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	spdy, err := remotecommand.NewSPDYExecutor(config, "POST", u)
	if err != nil {
		return nil, err
	}
	// RFC 6455: the WebSocket handshake is a GET.
	ws, err := remotecommand.NewWebSocketExecutor(config, "GET", u.String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

func running(pod *corev1.Pod, container string) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			return s.State.Running != nil
		}
	}
	return false
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Code   int
	Output string
}

func (e *ExitError) Error() string {
	if e.Output == "" {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return fmt.Sprintf("exit code %d: %q", e.Code, e.Output)
}

// boundedBuffer keeps the first max bytes written to it and drops the rest. The command's
// stdout and stderr are copied to it at once, from two goroutines.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
