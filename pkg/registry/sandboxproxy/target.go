// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// SplitNamePort splits the name of a proxy request, NAME or NAME:PORT, where PORT is a container
// port number or name. Unlike pods/proxy there is no scheme part: the proxy speaks plain HTTP.
func SplitNamePort(id string) (name, port string, err error) {
	name, port, hasPort := strings.Cut(id, ":")
	if name == "" {
		return "", "", apierrors.NewBadRequest(fmt.Sprintf("invalid proxy request %q: the name is empty", id))
	}
	if !hasPort {
		return name, "", nil
	}
	if _, err := parsePortNumber(port); err == nil {
		return name, port, nil
	}
	if errs := validation.IsValidPortName(port); len(errs) > 0 {
		return "", "", apierrors.NewBadRequest(fmt.Sprintf("invalid proxy request %q: port %q is neither a port number nor a port name: %s", id, port, strings.Join(errs, "; ")))
	}
	return name, port, nil
}

func parsePortNumber(s string) (int32, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a port number", s)
	}
	return int32(n), nil
}

// PodName is the name of the Sandbox's pod, as the sandbox controller names it.
func PodName(sb *agents.Sandbox) string {
	if n := sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; n != "" {
		return n
	}
	return sb.Name
}

// Target is where a proxy request for the Sandbox goes: the address in the status of its pod, at
// a port the pod's containers declare, over plain HTTP. Nothing from the request but the port
// (checked against the declared ones) and the path decides it. The pod must be controlled by the
// Sandbox (its UID, not its name) and be Running and Ready; a pod in the host network is
// refused unless hostNetwork lets its node's address be reached, since every port of its node
// would be reachable through it.
func Target(sb *agents.Sandbox, pod *corev1.Pod, port string, hostNetwork HostNetworkRanges) (*url.URL, error) {
	if pod == nil {
		return nil, notRunning(sb, "its pod does not exist")
	}
	if !objectmeta.IsControlledBy(pod, agents.Kind("Sandbox"), sb.UID) {
		return nil, notRunning(sb, fmt.Sprintf("pod %s is not controlled by it", pod.Name))
	}
	if ready, why := podReady(pod); !ready {
		return nil, notRunning(sb, why)
	}
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil {
		return nil, notRunning(sb, "its pod has no IP")
	}
	if why := hostNetwork.Refusal(pod); why != "" {
		return nil, apierrors.NewForbidden(agents.Resource("sandboxes/proxy"), sb.Name, errors.New(why))
	}
	if ip = ip.Unmap(); neverReached(ip) {
		return nil, apierrors.NewForbidden(agents.Resource("sandboxes/proxy"), sb.Name,
			fmt.Errorf("its pod's address %s is not one this server proxies to", ip))
	}
	number, err := declaredPort(pod, port)
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: netip.AddrPortFrom(ip, uint16(number)).String()}, nil
}

// declaredPort resolves port (a number, a name or "" for the first) against the TCP ports the
// pod's containers declare.
func declaredPort(pod *corev1.Pod, port string) (int32, error) {
	var declared []corev1.ContainerPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
				declared = append(declared, p)
			}
		}
	}
	portPath := field.NewPath("spec", "podTemplate", "spec", "containers").Key("ports")
	if len(declared) == 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("%s: the sandbox's pod declares no TCP container port to proxy to", portPath))
	}
	if port == "" {
		return declared[0].ContainerPort, nil
	}
	number, numErr := parsePortNumber(port)
	for _, p := range declared {
		if (numErr == nil && p.ContainerPort == number) || (numErr != nil && p.Name == port) {
			return p.ContainerPort, nil
		}
	}
	return 0, apierrors.NewBadRequest(fmt.Sprintf("%s: port %q is not a TCP port the sandbox's pod declares", portPath, port))
}

// PodReady says whether a pod runs, is Ready and is not terminating: what the proxy needs of it.
func PodReady(pod *corev1.Pod) bool {
	ready, _ := podReady(pod)
	return ready
}

func podReady(pod *corev1.Pod) (bool, string) {
	switch {
	case pod.DeletionTimestamp != nil:
		return false, "its pod is terminating"
	case pod.Status.Phase != corev1.PodRunning:
		return false, fmt.Sprintf("its pod is %s", cmp.Or(string(pod.Status.Phase), string(corev1.PodPending)))
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true, ""
		}
	}
	return false, "its pod is not Ready"
}

// RetryAfterSeconds is what a 503 for a sandbox that is not running asks the client to wait.
const RetryAfterSeconds = 5

// notRunning is the 503, with Retry-After, for a sandbox that cannot take requests now.
func notRunning(sb *agents.Sandbox, why string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    503,
		Reason:  metav1.StatusReasonServiceUnavailable,
		Message: fmt.Sprintf("sandbox %s/%s is not running: %s", sb.Namespace, sb.Name, why),
		Details: &metav1.StatusDetails{
			Name: sb.Name, Group: agents.GroupName, Kind: "sandboxes",
			RetryAfterSeconds: RetryAfterSeconds,
		},
	}}
}

// Suspended reports whether the Sandbox asks for no pod.
func Suspended(sb *agents.Sandbox) bool {
	return (sb.Spec.Replicas != nil && *sb.Spec.Replicas == 0) || sb.Spec.OperatingMode == agents.OperatingModeSuspended
}
