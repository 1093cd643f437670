// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// TestSyncService walks the spec.service tri-state table of the seed: unset, true and false
// against a missing, owned, unowned and foreign Service. The pod is Running and Ready throughout,
// so Ready shows whether the Service was counted.
func TestSyncService(t *testing.T) {
	var unset *bool
	yes, no := ptr.To(true), ptr.To(false)
	pod := func() *corev1.Pod { return newPod(testName, owned, readyPod("10.0.0.5")) }
	svcConflict := `Service "sb" already exists and is controlled by ReplicaSet "other": it was not made for this object and is left as it is`
	svcUnowned := `Service "sb" already exists and has no controller: it was not made for this object and is left as it is`
	conflictCond := func(msg string) condSummary {
		return want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonOwnershipConflict, msg)
	}
	readyWithSvc := want(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service exists")
	withSvcStatus := func(fqdn string) *agentsv1beta1.SandboxStatus {
		st := runningStatus("10.0.0.5")
		st.Service, st.ServiceFQDN = testName, fqdn
		return st
	}
	drifted := func(s *corev1.Service) {
		s.Labels = labels("app", "x")
		s.Spec.Selector = labels("app", "x", hashLabel, testHash)
	}
	withClusterIP := func(ip string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.ClusterIP = ip }
	}
	unlabelled := func(s *corev1.Service) { s.Labels = nil; s.Spec.Selector = nil }
	wantDriven := func(owner []metav1.OwnerReference) func(t *testing.T, f *fixture) {
		return func(t *testing.T, f *fixture) {
			svc := written[*corev1.Service](t, &f.kube.Fake, "update", "services")
			if svc.Labels[hashLabel] != testHash {
				t.Errorf("labels = %v, want the hash label", svc.Labels)
			}
			checkMap(t, "selector", svc.Spec.Selector, labels(uidLabel, string(testUID)))
			if !apiequality.Semantic.DeepEqual(svc.OwnerReferences, owner) {
				t.Errorf("owner references = %+v, want %+v", svc.OwnerReferences, owner)
			}
		}
	}
	fqdn := testName + "." + testNS + ".svc.cluster.local"
	runSyncCases(t, []syncCase{
		// spec.service unset
		{
			name:       "unset, missing: none created, not required",
			sandbox:    newSandbox(withService(unset)),
			cached:     []runtime.Object{pod()},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		{
			name:       "unset, owned: kept and its drift fixed",
			sandbox:    newSandbox(withService(unset)),
			cached:     []runtime.Object{pod(), newService(owned, drifted)},
			wantWrites: []string{"update services", "update sandboxes/status"},
			wantConds:  []condSummary{readyWithSvc},
			wantStatus: withSvcStatus(fqdn),
			check: func(t *testing.T, f *fixture) {
				wantDriven([]metav1.OwnerReference{sandboxRef()})(t, f)
				svc := written[*corev1.Service](t, &f.kube.Fake, "update", "services")
				checkMap(t, "labels", svc.Labels, labels("app", "x", hashLabel, testHash))
			},
			steady: true,
		},
		{
			name:       "unset, owned and in shape: no write",
			sandbox:    newSandbox(withService(unset)),
			cached:     []runtime.Object{pod(), newService(owned)},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyWithSvc},
			wantStatus: withSvcStatus(fqdn),
			steady:     true,
		},
		{
			name:       "unset, unowned: left alone, not the Sandbox's Service, not counted",
			sandbox:    newSandbox(withService(unset)),
			cached:     []runtime.Object{pod(), newService(unowned, drifted, withClusterIP("10.96.0.9"))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		{
			name:       "unset, controlled by another object: left alone, none wanted, no error",
			sandbox:    newSandbox(withService(unset)),
			cached:     []runtime.Object{pod(), newService(ownedByOther)},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		// spec.service true
		{
			name:       "true, missing: a headless Service selecting the Sandbox UID label is created",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod()},
			wantWrites: []string{"create services", "update sandboxes/status"},
			wantConds:  []condSummary{readyWithSvc},
			wantStatus: withSvcStatus(fqdn),
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				svc := written[*corev1.Service](t, &f.kube.Fake, "create", "services")
				if svc.Name != testName || svc.Namespace != testNS {
					t.Errorf("service is %s/%s", svc.Namespace, svc.Name)
				}
				if svc.Spec.ClusterIP != corev1.ClusterIPNone {
					t.Errorf("clusterIP = %q, want None", svc.Spec.ClusterIP)
				}
				checkMap(t, "selector", svc.Spec.Selector, labels(uidLabel, string(testUID)))
				checkMap(t, "labels", svc.Labels, labels(hashLabel, testHash))
				if !apiequality.Semantic.DeepEqual(svc.OwnerReferences, []metav1.OwnerReference{sandboxRef()}) {
					t.Errorf("owner references = %+v", svc.OwnerReferences)
				}
			},
		},
		{
			name: "true, the Service of a running Sandbox deleted: created again, with an event",
			sandbox: newSandbox(withService(yes), withStatus(agentsv1beta1.SandboxStatus{
				Conditions: []metav1.Condition{cond(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service exists")},
			})),
			cached:     []runtime.Object{pod()},
			wantWrites: []string{"create services", "update sandboxes/status"},
			wantEvents: []string{"Normal ServiceCreated Created headless service sb"},
			wantConds:  []condSummary{readyWithSvc},
			wantStatus: withSvcStatus(fqdn),
		},
		{
			name:       "true, unowned headless: not adopted or relabelled, OwnershipConflict naming it",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod(), newService(unowned, drifted)},
			wantErr:    svcUnowned,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + svcUnowned},
			wantConds:  []condSummary{conflictCond(svcUnowned)},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		{
			name:       "true, owned, made before the UID selector: moved to it in one write",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod(), newService(owned, func(s *corev1.Service) { s.Spec.Selector = labels(hashLabel, testHash) })},
			wantWrites: []string{"update services", "update sandboxes/status"},
			wantConds:  []condSummary{readyWithSvc},
			wantStatus: withSvcStatus(fqdn),
			check:      wantDriven([]metav1.OwnerReference{sandboxRef()}),
			steady:     true,
		},
		{
			name:       "true, unowned and unlabelled, unseen by the cache: left alone after AlreadyExists",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod()},
			apiOnly:    []runtime.Object{newService(unowned, unlabelled)},
			wantErr:    svcUnowned,
			wantWrites: []string{"create services", "update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + svcUnowned},
			wantConds:  []condSummary{conflictCond(svcUnowned)},
			wantStatus: runningStatus("10.0.0.5"),
		},
		{
			name:       "true, made by this Sandbox just before a restart, unseen by the cache: found after AlreadyExists, not made again",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod()},
			apiOnly:    []runtime.Object{newService(owned)},
			wantWrites: []string{"create services", "update sandboxes/status"},
			wantConds:  []condSummary{readyWithSvc},
			wantStatus: withSvcStatus(fqdn),
		},
		{
			name:       "true, unowned with a cluster IP: not touched, OwnershipConflict",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod(), newService(unowned, withClusterIP("10.96.0.9"))},
			wantErr:    svcUnowned,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + svcUnowned},
			wantConds:  []condSummary{conflictCond(svcUnowned)},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		{
			name:       "true, owned: drift fixed",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod(), newService(owned, drifted)},
			wantWrites: []string{"update services", "update sandboxes/status"},
			wantConds:  []condSummary{readyWithSvc},
			check:      wantDriven([]metav1.OwnerReference{sandboxRef()}),
			steady:     true,
		},
		{
			name:       "true, controlled by another object: refused with an error",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod(), newService(ownedByOther)},
			wantErr:    svcConflict,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + svcConflict},
			wantConds:  []condSummary{conflictCond(svcConflict)},
			steady:     true,
		},
		{
			name:       "true, controlled by another object, unseen by the cache: refused after AlreadyExists",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod()},
			apiOnly:    []runtime.Object{newService(ownedByOther, unlabelled)},
			wantErr:    svcConflict,
			wantWrites: []string{"create services", "update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + svcConflict},
			wantConds:  []condSummary{conflictCond(svcConflict)},
		},
		// spec.service false
		{
			name:       "false, owned: deleted (this very Service), status cleared",
			sandbox:    newSandbox(withService(no), withStatus(*withSvcStatus(fqdn))),
			cached:     []runtime.Object{pod(), newService(owned)},
			wantWrites: []string{"delete services", "update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				if got := deletes(&f.kube.Fake, "services"); got[testName] != types.UID("svc-uid") {
					t.Errorf("service deletes = %v, want %s with UID precondition svc-uid", got, testName)
				}
			},
		},
		{
			name:       "false, owned and already terminating: not deleted again",
			sandbox:    newSandbox(withService(no)),
			cached:     []runtime.Object{pod(), newService(owned, func(s *corev1.Service) { s.DeletionTimestamp = &metav1.Time{Time: testNow} })},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
		},
		{
			name:       "false, unowned: left alone, not counted",
			sandbox:    newSandbox(withService(no)),
			cached:     []runtime.Object{pod(), newService(unowned)},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		{
			name:       "false, controlled by another object: left alone without an error",
			sandbox:    newSandbox(withService(no)),
			cached:     []runtime.Object{pod(), newService(ownedByOther)},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		{
			name:       "false, missing: nothing to do",
			sandbox:    newSandbox(withService(no)),
			cached:     []runtime.Object{pod()},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			steady:     true,
		},
		// readiness and the FQDN
		{
			name:       "a required Service does not make a pending pod Ready",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{newPod(testName, owned), newService(owned)},
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady,
				"Pod is Pending; Service exists")},
			steady: true,
		},
		{
			name:       "FQDN uses the configured cluster domain",
			sandbox:    newSandbox(withService(yes)),
			cached:     []runtime.Object{pod(), newService(owned)},
			domain:     "custom.domain",
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyWithSvc},
			wantStatus: withSvcStatus("sb.default.svc.custom.domain"),
			steady:     true,
		},
	})
}
