// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// HostNetworkFlag is the server flag that fills HostNetworkRanges.
const HostNetworkFlag = "--proxy-host-network-cidrs"

// HostNetworkRanges is the administrator's opt-in to host-network Sandbox pods, per class of
// nodes: the address ranges of the nodes whose host-network pods the proxy, exec, attach and
// port-forward may reach. Such a pod's address and network namespace are its node's, so whatever
// the node serves is reachable through it; none is by default. A loopback, link-local, multicast
// or unspecified address is never reached, whatever the ranges say.
type HostNetworkRanges []netip.Prefix

// Refusal says why the pod may not be reached, or "" when it may: a pod in its own network
// namespace always may (Target checks its address); a host-network one only at an address inside
// the ranges.
func (r HostNetworkRanges) Refusal(pod *corev1.Pod) string {
	if !pod.Spec.HostNetwork {
		return ""
	}
	addr, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil {
		return "its pod runs in the host network and reports no address"
	}
	addr = addr.Unmap()
	if !neverReached(addr) {
		for _, p := range r {
			if p.Contains(addr) {
				return ""
			}
		}
	}
	return fmt.Sprintf("its pod runs in the host network, so its address %s and its network namespace are its node's; "+
		"this server reaches host-network pods only on nodes whose address is in %s (%s), never on a loopback address",
		addr, HostNetworkFlag, r)
}

// String lists the ranges as the flag takes them; "none" when there are none.
func (r HostNetworkRanges) String() string {
	if len(r) == 0 {
		return "none"
	}
	s := make([]string, len(r))
	for i, p := range r {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// neverReached: the addresses the proxy never dials, whatever the pod or the flags say: the
// machine's own loopback, the cloud metadata and other link-local ranges, multicast, unspecified.
func neverReached(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsMulticast() || addr.IsUnspecified() || addr.IsInterfaceLocalMulticast()
}
