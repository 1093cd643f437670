// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// PodExec runs a command in a container of a pod controlled by the object of UID controller, with
// stdin; nil when it exited 0.
type PodExec interface {
	Run(ctx context.Context, namespace, pod string, controller types.UID, container string, command []string, stdin []byte) error
}

// maxDeliveryMessage bounds the part of a failed delivery's error a condition quotes.
const maxDeliveryMessage = 512

// deliverEnv hands the claim's env to its Ready sandbox's running containers as the template's
// envVarsDelivery says, and records the outcome in the claim's EnvDelivered condition. A warm
// member whose delivery failed is deleted, never handed over half-configured: the claim then gets
// a sandbox made with its env (see reconcileActive). A sandbox made for the claim keeps its
// failure in the condition.
func (c *Controller) deliverEnv(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox) error {
	template, err := c.templates.SandboxTemplates(claim.Namespace).Get(claim.Spec.TemplateRef.Name)
	var how *extensionsv1beta1.EnvVarsDelivery
	if err == nil {
		how = template.Spec.EnvVarsDelivery
	}
	byContainer := adoption.ClaimEnvByContainer(claim, &sb.Spec.PodTemplate.Spec)
	start := c.now()
	switch {
	case how == nil:
		err = fmt.Errorf("template %s no longer says how to deliver env (spec.envVarsDelivery)", claim.Spec.TemplateRef.Name)
	case c.podExec == nil:
		err = fmt.Errorf("this server cannot reach the cluster's pods/exec")
	default:
		err = c.runDelivery(ctx, sb, byContainer, how)
	}
	if ctx.Err() != nil {
		return ctx.Err() // the controller is stopping: the next leader delivers
	}
	if err == nil {
		msg := fmt.Sprintf("Delivered %d variables to sandbox %s by %s in %s", len(claim.Spec.Env), sb.Name, deliveryWay(how), c.now().Sub(start).Round(time.Millisecond))
		adoption.SetEnvDelivered(claim, metav1.ConditionTrue, extensionsv1beta1.EnvReasonDelivered, msg)
		c.events.Event(claim, corev1.EventTypeNormal, "EnvDelivered", msg)
		return nil
	}
	why := err.Error()
	if len(why) > maxDeliveryMessage {
		// A cut may split a character of the command's output.
		why = strings.ToValidUTF8(why[:maxDeliveryMessage], "") + "..."
	}
	if warmLaunch(sb) {
		msg := fmt.Sprintf("Delivering the env to warm sandbox %s failed: %s; the sandbox is discarded and a new one is made with the env", sb.Name, why)
		c.events.Event(claim, corev1.EventTypeWarning, "EnvDeliveryFailed", msg)
		err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Delete(ctx, sb.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sb.UID}})
		if err := ignoreGone(err); err != nil {
			return err
		}
		adoption.SetEnvDelivered(claim, metav1.ConditionFalse, extensionsv1beta1.EnvReasonWarmFailed, msg)
		return nil
	}
	msg := fmt.Sprintf("Delivering the env to sandbox %s failed: %s", sb.Name, why)
	c.events.Event(claim, corev1.EventTypeWarning, "EnvDeliveryFailed", msg)
	adoption.SetEnvDelivered(claim, metav1.ConditionFalse, extensionsv1beta1.EnvReasonFailed, msg)
	return nil
}

// runDelivery delivers each container's variables in turn, all within the template's timeout.
func (c *Controller) runDelivery(ctx context.Context, sb *agentsv1beta1.Sandbox, byContainer map[string]map[string]string, how *extensionsv1beta1.EnvVarsDelivery) error {
	timeout := time.Duration(extensionsv1beta1.DefaultEnvVarsDeliveryTimeoutSeconds) * time.Second
	if how.TimeoutSeconds != nil {
		timeout = time.Duration(*how.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pod := sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation]
	if pod == "" {
		pod = sb.Name
	}
	for _, container := range slices.Sorted(maps.Keys(byContainer)) {
		command, stdin, err := deliveryCommand(how, byContainer[container])
		if err != nil {
			return err
		}
		if err := c.podExec.Run(ctx, sb.Namespace, pod, sb.UID, container, command, stdin); err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("container %s: timed out after %s", container, timeout)
			}
			return fmt.Errorf("container %s: %w", container, err)
		}
	}
	return nil
}

// fileDeliveryScript writes its stdin to the file $1 owner-only, through a temporary file moved
// into place, so that the process never reads half of it.
const fileDeliveryScript = `umask 077 && d="${1%/*}" && { [ -z "$d" ] || mkdir -p -- "$d"; } && cat > "$1.tmp.$$" && chmod 600 "$1.tmp.$$" && mv -f -- "$1.tmp.$$" "$1"`

// deliveryCommand is what runs in a container to deliver env, and its stdin: for a file, shell
// assignments written by fileDeliveryScript; for a command, one JSON object.
func deliveryCommand(how *extensionsv1beta1.EnvVarsDelivery, env map[string]string) ([]string, []byte, error) {
	if how.File != "" {
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(&b, "export %s=%s\n", name, shellQuote(env[name]))
		}
		return []string{"/bin/sh", "-c", fileDeliveryScript, "sh", how.File}, []byte(b.String()), nil
	}
	stdin, err := json.Marshal(env)
	return how.Command, stdin, err
}

// shellQuote quotes s for a POSIX shell: in single quotes, each single quote closed, escaped and
// reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func deliveryWay(how *extensionsv1beta1.EnvVarsDelivery) string {
	if how.File != "" {
		return "file " + how.File
	}
	return fmt.Sprintf("command %q", how.Command)
}

// warmLaunch says whether sb was a warm pool's member when its claim adopted it (its pod was made
// before the claim, without the claim's env).
func warmLaunch(sb *agentsv1beta1.Sandbox) bool {
	return sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] != ""
}

// envDeliveryReady says whether the claim's env is due and its sandbox can take it: Ready, not
// being deleted, and not a warm member after a warm delivery failed (the one being discarded,
// which the cache may still show alive).
func envDeliveryReady(claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox) bool {
	return sb != nil && sb.DeletionTimestamp == nil && adoption.EnvDeliveryDue(claim) &&
		!(adoption.WarmEnvDeliveryFailed(claim) && warmLaunch(sb)) &&
		meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxReadyKey)
}
