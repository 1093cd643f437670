// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

func TestSyncPVCs(t *testing.T) {
	pvcConflict := `PersistentVolumeClaim "data-sb" already exists and is controlled by ReplicaSet "other": it was not made for this object and is left as it is`
	pvcUnowned := `PersistentVolumeClaim "data-sb" already exists and has no controller: it was not made for this object and is left as it is`
	conflictCond := func(msg string) condSummary {
		return want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonOwnershipConflict, msg)
	}
	podOK := newPod(testName, owned, readyPod("10.0.0.5"))
	runSyncCases(t, []syncCase{
		{
			name: "one claim per template: <vct>-<sandbox>, template metadata, hash label, controller ref",
			sandbox: newSandbox(func(sb *agentsv1beta1.Sandbox) {
				sb.Spec.VolumeClaimTemplates = []agentsv1beta1.PersistentVolumeClaimTemplate{{
					EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: "data",
						Labels: labels("tier", "storage"), Annotations: labels("backup", "daily")},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceStorage: resource.MustParse("10Gi")}},
					},
				}}
			}),
			wantWrites: []string{"create persistentvolumeclaims", "create pods", "update sandboxes/status"},
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				pvc := written[*corev1.PersistentVolumeClaim](t, &f.kube.Fake, "create", "persistentvolumeclaims")
				if pvc.Name != "data-sb" || pvc.Namespace != testNS {
					t.Errorf("claim is %s/%s, want %s/data-sb", pvc.Namespace, pvc.Name, testNS)
				}
				checkMap(t, "labels", pvc.Labels, labels("tier", "storage", hashLabel, testHash))
				checkMap(t, "annotations", pvc.Annotations, labels("backup", "daily"))
				if !apiequality.Semantic.DeepEqual(pvc.OwnerReferences, []metav1.OwnerReference{sandboxRef()}) {
					t.Errorf("owner references = %+v", pvc.OwnerReferences)
				}
				if !apiequality.Semantic.DeepEqual(pvc.Spec, f.cachedSandbox().Spec.VolumeClaimTemplates[0].Spec) {
					t.Errorf("claim spec = %+v, want the template's", pvc.Spec)
				}
				pod := written[*corev1.Pod](t, &f.kube.Fake, "create", "pods")
				if want := []corev1.Volume{claimVolume("data", "data-sb")}; !apiequality.Semantic.DeepEqual(pod.Spec.Volumes, want) {
					t.Errorf("pod volumes = %+v, want %+v", pod.Spec.Volumes, want)
				}
			},
		},
		{
			name: "template labels do not replace the hash label",
			sandbox: newSandbox(func(sb *agentsv1beta1.Sandbox) {
				withVCT("data")(sb)
				sb.Spec.VolumeClaimTemplates[0].Labels = labels(hashLabel, "forged")
			}),
			wantWrites: []string{"create persistentvolumeclaims", "create pods", "update sandboxes/status"},
			check: func(t *testing.T, f *fixture) {
				pvc := written[*corev1.PersistentVolumeClaim](t, &f.kube.Fake, "create", "persistentvolumeclaims")
				checkMap(t, "labels", pvc.Labels, labels(hashLabel, testHash))
			},
		},
		{
			name:       "owned claims are left as they are",
			sandbox:    newSandbox(withVCT("data", "cache")),
			cached:     []runtime.Object{newPVC("data", owned), newPVC("cache", owned), podOK},
			wantWrites: []string{"update sandboxes/status"},
			steady:     true,
		},
		{
			name:    "unowned claim in the cache: not adopted or relabelled, no pod, OwnershipConflict naming it",
			sandbox: newSandbox(withVCT("data")),
			cached: []runtime.Object{newPVC("data", unowned, func(c *corev1.PersistentVolumeClaim) {
				c.Labels["keep"] = "me"
			})},
			wantErr:    pvcUnowned,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + pvcUnowned},
			wantConds:  []condSummary{conflictCond(pvcUnowned)},
			steady:     true,
		},
		{
			name:       "unowned claim while the Sandbox's own pod runs: the pod is still reported, the claim left alone",
			sandbox:    newSandbox(withVCT("data")),
			cached:     []runtime.Object{newPVC("data", unowned), podOK},
			wantErr:    pvcUnowned,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + pvcUnowned},
			wantConds:  []condSummary{conflictCond(pvcUnowned)},
			wantStatus: runningStatus("10.0.0.5"),
		},
		{
			name:       "unowned, unlabelled claim unseen by the cache: create says AlreadyExists, then left alone",
			sandbox:    newSandbox(withVCT("data")),
			apiOnly:    []runtime.Object{newPVC("data", unowned, func(c *corev1.PersistentVolumeClaim) { c.Labels = nil })},
			wantErr:    pvcUnowned,
			wantWrites: []string{"create persistentvolumeclaims", "update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + pvcUnowned},
			wantConds:  []condSummary{conflictCond(pvcUnowned)},
		},
		{
			name:       "claim made by this Sandbox just before a restart, unseen by the cache: found by its controller reference, not made again",
			sandbox:    newSandbox(withVCT("data")),
			apiOnly:    []runtime.Object{newPVC("data", owned)},
			wantWrites: []string{"create persistentvolumeclaims", "create pods", "update sandboxes/status"},
			wantConds:  []condSummary{notReadyPending},
		},
		{
			name:       "claim controlled by another object: refused, no pod, OwnershipConflict",
			sandbox:    newSandbox(withVCT("data")),
			cached:     []runtime.Object{newPVC("data", ownedByOther)},
			wantErr:    pvcConflict,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + pvcConflict},
			wantConds:  []condSummary{conflictCond(pvcConflict)},
			steady:     true,
		},
		{
			name:       "claim controlled by another object, unseen by the cache: refused after AlreadyExists",
			sandbox:    newSandbox(withVCT("data")),
			apiOnly:    []runtime.Object{newPVC("data", ownedByOther, func(c *corev1.PersistentVolumeClaim) { c.Labels = nil })},
			wantErr:    pvcConflict,
			wantWrites: []string{"create persistentvolumeclaims", "update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + pvcConflict},
			wantConds:  []condSummary{conflictCond(pvcConflict)},
		},
		{
			name:       "claim create fails: FailedCreate event, no pod, ReconcilerError",
			sandbox:    newSandbox(withVCT("data")),
			reactors:   failCreate("persistentvolumeclaims", errors.New("no storage class")),
			wantErr:    "no storage class",
			wantWrites: []string{"create persistentvolumeclaims", "update sandboxes/status"},
			wantEvents: []string{"Warning FailedCreate Creating PersistentVolumeClaim data-sb: no storage class"},
			wantConds: []condSummary{want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonReconcilerError,
				"Error seen: no storage class")},
		},
		{
			name:       "suspend deletes the pod and keeps the claims",
			sandbox:    newSandbox(withVCT("data"), withReplicas(0)),
			cached:     []runtime.Object{newPVC("data", owned), podOK},
			wantWrites: []string{"delete pods", "update sandboxes/status"},
			wantEvents: []string{"Normal Suspended Deleted pod sb; volumes are kept"},
		},
	})
}

// mustSandbox is the test Sandbox from the controller's cache.
func (f *fixture) cachedSandbox() *agentsv1beta1.Sandbox {
	f.t.Helper()
	sb, err := f.c.sandboxes.Sandboxes(testNS).Get(testName)
	f.must(err)
	return sb
}
