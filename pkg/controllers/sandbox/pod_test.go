// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	agentsfake "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
)

const (
	hashLabel     = agentsv1beta1.SandboxNameHashLabel
	uidLabel      = agentsv1beta1.SandboxUIDLabel
	propLabels    = agentsv1beta1.SandboxPropagatedLabelsAnnotation
	propAnnots    = agentsv1beta1.SandboxPropagatedAnnotationsAnnotation
	podNameAnnot  = agentsv1beta1.SandboxPodNameAnnotation
	readyType     = agentsv1beta1.SandboxConditionReady
	suspendedType = agentsv1beta1.SandboxConditionSuspended
	finishedType  = agentsv1beta1.SandboxConditionFinished
)

var (
	notReadyPending = want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady,
		"Pod is Pending; Service is not required")
	readyNoService = want(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady,
		"Pod is Ready; Service is not required")
)

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func podMeta(l, a map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels, p.Annotations = l, a }
}

func checkMap(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if !maps.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func failCreate(resource string, err error) func(*kubefake.Clientset, *agentsfake.Clientset) {
	return func(kube *kubefake.Clientset, _ *agentsfake.Clientset) {
		kube.PrependReactor("create", resource, func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, err
		})
	}
}

func TestSyncPod(t *testing.T) {
	conflictMsg := `Pod "sb" already exists and is controlled by ReplicaSet "other": it was not made for this object and is left as it is`
	unownedMsg := `Pod "sb" already exists and has no controller: it was not made for this object and is left as it is`
	conflictCond := func(msg string) condSummary {
		return want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonOwnershipConflict, msg)
	}
	runSyncCases(t, []syncCase{
		{
			name: "missing pod is created after the template, named after the Sandbox",
			sandbox: newSandbox(withTemplateMeta(labels("app", "demo", "tier", "web"),
				labels("note", "hi", "z/last", "1"))),
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantConds:  []condSummary{notReadyPending},
			wantStatus: runningStatus(),
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				pod := written[*corev1.Pod](t, &f.kube.Fake, "create", "pods")
				if pod.Name != testName || pod.Namespace != testNS {
					t.Errorf("pod is %s/%s, want %s/%s", pod.Namespace, pod.Name, testNS, testName)
				}
				checkMap(t, "labels", pod.Labels, labels("app", "demo", "tier", "web", hashLabel, testHash, uidLabel, string(testUID)))
				checkMap(t, "annotations", pod.Annotations, labels("note", "hi", "z/last", "1",
					propLabels, "app,tier", propAnnots, "note,z/last"))
				if !apiequality.Semantic.DeepEqual(pod.OwnerReferences, []metav1.OwnerReference{sandboxRef()}) {
					t.Errorf("owner references = %+v, want the Sandbox as controller", pod.OwnerReferences)
				}
				if !apiequality.Semantic.DeepEqual(pod.Spec, newSandbox().Spec.PodTemplate.Spec) {
					t.Errorf("pod spec = %+v, want the template's", pod.Spec)
				}
				if len(testHash) != 8 {
					t.Errorf("hash %q is not 8 hex digits", testHash)
				}
			},
		},
		{
			name:       "template without metadata: only the hash label, no bookkeeping annotations",
			sandbox:    newSandbox(),
			wantWrites: []string{"create pods", "update sandboxes/status"},
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				pod := written[*corev1.Pod](t, &f.kube.Fake, "create", "pods")
				checkMap(t, "labels", pod.Labels, labels(uidLabel, string(testUID), hashLabel, testHash, uidLabel, string(testUID)))
				checkMap(t, "annotations", pod.Annotations, nil)
			},
		},
		{
			name: "claim volumes replace a same-named pod volume or are appended",
			sandbox: newSandbox(withVCT("work", "cache"), func(sb *agentsv1beta1.Sandbox) {
				sb.Spec.PodTemplate.Spec.Volumes = []corev1.Volume{emptyDir("work"), emptyDir("tmp")}
			}),
			wantWrites: []string{"create persistentvolumeclaims", "create persistentvolumeclaims", "create pods", "update sandboxes/status"},
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				pod := written[*corev1.Pod](t, &f.kube.Fake, "create", "pods")
				want := []corev1.Volume{claimVolume("work", "work-sb"), emptyDir("tmp"), claimVolume("cache", "cache-sb")}
				if !apiequality.Semantic.DeepEqual(pod.Spec.Volumes, want) {
					t.Errorf("volumes = %+v, want %+v", pod.Spec.Volumes, want)
				}
			},
		},
		{
			name:       "pod-name annotation: the named pod is the Sandbox's pod",
			sandbox:    newSandbox(withAnnotation(podNameAnnot, "warm-1")),
			cached:     []runtime.Object{newPod("warm-1", owned, readyPod("10.0.0.5"))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
		},
		{
			name:    "pod-name annotation: an unowned named pod is not taken: left as it is, OwnershipConflict",
			sandbox: newSandbox(withAnnotation(podNameAnnot, "warm-1"), withTemplateMeta(labels("app", "demo"), nil)),
			cached: []runtime.Object{newPod("warm-1", unowned, readyPod("10.0.0.5"),
				podMeta(labels(hashLabel, testHash, "pool", "p"), nil))},
			wantErr:    `Pod "warm-1" already exists and has no controller`,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + strings.ReplaceAll(unownedMsg, `"sb"`, `"warm-1"`)},
			wantConds:  []condSummary{conflictCond(strings.ReplaceAll(unownedMsg, `"sb"`, `"warm-1"`))},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
		{
			name:       "pod-name annotation: the named pod is gone, the annotation is cleared and no pod is made",
			sandbox:    newSandbox(withAnnotation(podNameAnnot, "warm-1")),
			cached:     []runtime.Object{newPod(testName, owned)},
			wantWrites: []string{"patch sandboxes", "update sandboxes/status"},
			wantConds: []condSummary{want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady,
				"Pod does not exist; Service is not required")},
			check: func(t *testing.T, f *fixture) {
				p := actions(&f.client.Fake, "patch", "sandboxes")[0].(clienttesting.PatchAction)
				if got, want := string(p.GetPatch()), `{"metadata":{"annotations":{"agents.x-k8s.io/pod-name":null}}}`; got != want {
					t.Errorf("patch = %s, want %s", got, want)
				}
				if p.GetPatchType() != "application/merge-patch+json" {
					t.Errorf("patch type = %s", p.GetPatchType())
				}
			},
		},
		{
			name:       "pod-name annotation naming the Sandbox itself (a member claimed before its pod was made): the pod is made, the annotation stays",
			sandbox:    newSandbox(withAnnotation(podNameAnnot, testName)),
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantConds:  []condSummary{notReadyPending},
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				if pod := written[*corev1.Pod](t, &f.kube.Fake, "create", "pods"); pod.Name != testName {
					t.Errorf("pod is %s, want %s", pod.Name, testName)
				}
			},
		},
		{
			name:    "owned pod: metadata drift is driven back, template removals pruned, foreign keys kept",
			sandbox: newSandbox(withTemplateMeta(labels("app", "demo", "tier", "web"), labels("note", "hi"))),
			cached: []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"), podMeta(
				labels(uidLabel, string(testUID), hashLabel, testHash, "app", "changed", "old", "x", "extra", "someone"),
				labels(propLabels, "app,old", propAnnots, "gone,note", "note", "stale", "gone", "1", "foreign", "keep")))},
			wantWrites: []string{"update pods", "update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				pod := written[*corev1.Pod](t, &f.kube.Fake, "update", "pods")
				checkMap(t, "labels", pod.Labels, labels(uidLabel, string(testUID), hashLabel, testHash, "app", "demo", "tier", "web", "extra", "someone"))
				checkMap(t, "annotations", pod.Annotations, labels(propLabels, "app,tier", propAnnots, "note",
					"note", "hi", "foreign", "keep"))
				if !apiequality.Semantic.DeepEqual(pod.OwnerReferences, []metav1.OwnerReference{sandboxRef()}) {
					t.Errorf("owner references changed: %+v", pod.OwnerReferences)
				}
			},
		},
		{
			name:       "owned pod: a removed hash label is put back",
			sandbox:    newSandbox(),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"), podMeta(labels("x", "y"), nil))},
			wantWrites: []string{"update pods", "update sandboxes/status"},
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				pod := written[*corev1.Pod](t, &f.kube.Fake, "update", "pods")
				checkMap(t, "labels", pod.Labels, labels(uidLabel, string(testUID), hashLabel, testHash, "x", "y"))
			},
		},
		{
			name:    "owned pod in sync: no pod write",
			sandbox: newSandbox(withTemplateMeta(labels("app", "demo"), nil)),
			cached: []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"),
				podMeta(labels(uidLabel, string(testUID), hashLabel, testHash, "app", "demo"), labels(propLabels, "app")))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			steady:     true,
		},
		{
			name:    "unowned pod of the wanted name: not adopted, patched or deleted; OwnershipConflict naming it",
			sandbox: newSandbox(withTemplateMeta(labels("app", "demo"), nil)),
			cached: []runtime.Object{newPod(testName, unowned, readyPod("10.0.0.5"), func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}}
			})},
			wantErr:    unownedMsg,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + unownedMsg},
			wantConds:  []condSummary{conflictCond(unownedMsg)},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
		{
			name:       "pod controlled by another object: not touched, Ready=False OwnershipConflict naming it",
			sandbox:    newSandbox(),
			cached:     []runtime.Object{newPod(testName, ownedByOther, readyPod("10.0.0.5"))},
			wantErr:    conflictMsg,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + conflictMsg},
			wantConds:  []condSummary{conflictCond(conflictMsg)},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
		{
			name:       "a Sandbox left by an earlier namespace of this name: nothing made, nothing written",
			sandbox:    newSandbox(withAnnotation(agentsv1beta1.NamespaceUIDAnnotation, "old-namespace-uid")),
			cached:     []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, UID: "new-namespace-uid"}}},
			wantWrites: nil,
		},
		{
			name:    "a Sandbox in a namespace being deleted: no pod is made (the cluster would refuse it), nothing written",
			sandbox: newSandbox(withAnnotation(agentsv1beta1.NamespaceUIDAnnotation, "namespace-uid")),
			cached: []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, UID: "namespace-uid"},
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}},
			wantWrites: nil,
		},
		{
			name:       "a Sandbox of the namespace it names by UID is served",
			sandbox:    newSandbox(withAnnotation(agentsv1beta1.NamespaceUIDAnnotation, "namespace-uid")),
			cached:     []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, UID: "namespace-uid"}}},
			wantWrites: []string{"create pods", "update sandboxes/status"},
		},
		{
			name:       "suspended with an unowned pod of the wanted name: the pod is not deleted",
			sandbox:    newSandbox(withReplicas(0)),
			cached:     []runtime.Object{newPod(testName, unowned, readyPod("10.0.0.5"))},
			wantErr:    unownedMsg,
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + unownedMsg},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
		{
			name:    "owned pod made before the UID label: the label is added in one write, nothing else changes",
			sandbox: newSandbox(withTemplateMeta(labels("app", "demo"), nil)),
			cached: []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"),
				podMeta(labels(hashLabel, testHash, "app", "demo"), labels(propLabels, "app")))},
			wantWrites: []string{"update pods", "update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5"),
			steady:     true,
			check: func(t *testing.T, f *fixture) {
				pod := written[*corev1.Pod](t, &f.kube.Fake, "update", "pods")
				checkMap(t, "labels", pod.Labels, labels(uidLabel, string(testUID), hashLabel, testHash, "app", "demo"))
				if !apiequality.Semantic.DeepEqual(pod.OwnerReferences, []metav1.OwnerReference{sandboxRef()}) {
					t.Errorf("owner references changed: %+v", pod.OwnerReferences)
				}
			},
		},
		{
			name:       "create AlreadyExists: a pod this Sandbox owns (earlier attempt) is used as is",
			sandbox:    newSandbox(),
			apiOnly:    []runtime.Object{newPod(testName, owned)},
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantConds:  []condSummary{notReadyPending},
			wantStatus: runningStatus(),
		},
		{
			name:       "create AlreadyExists: the Sandbox's own pod, its labels taken off (so uncached): labels put back, not made twice",
			sandbox:    newSandbox(),
			apiOnly:    []runtime.Object{newPod(testName, owned, podMeta(labels("x", "y"), nil))},
			wantWrites: []string{"create pods", "update pods", "update sandboxes/status"},
			wantConds:  []condSummary{notReadyPending},
			check: func(t *testing.T, f *fixture) {
				pod := written[*corev1.Pod](t, &f.kube.Fake, "update", "pods")
				checkMap(t, "labels", pod.Labels, labels(uidLabel, string(testUID), hashLabel, testHash, "x", "y"))
			},
		},
		{
			name:    "create AlreadyExists: an unowned, unlabelled pod is fetched and left as it is",
			sandbox: newSandbox(withTemplateMeta(labels("app", "demo"), nil)),
			apiOnly: []runtime.Object{newPod(testName, unowned, podMeta(nil, nil))},
			reactors: func(kube *kubefake.Clientset, _ *agentsfake.Clientset) {
				// The cluster answers the create with AlreadyExists, whatever the tracker holds.
				kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewAlreadyExists(corev1.Resource("pods"), testName)
				})
			},
			wantErr:    unownedMsg,
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + unownedMsg},
			wantConds:  []condSummary{conflictCond(unownedMsg)},
			check: func(t *testing.T, f *fixture) {
				if len(actions(&f.kube.Fake, "get", "pods")) != 1 {
					t.Errorf("want one get of the pod after AlreadyExists")
				}
			},
		},
		{
			name:       "create AlreadyExists: a pod controlled by another object is refused",
			sandbox:    newSandbox(),
			apiOnly:    []runtime.Object{newPod(testName, ownedByOther)},
			wantErr:    conflictMsg,
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantEvents: []string{"Warning OwnershipConflict " + conflictMsg},
			wantConds:  []condSummary{conflictCond(conflictMsg)},
		},
		{
			name:    "create Forbidden (a pod quota): Ready=False PodCreationForbidden with the cluster's message",
			sandbox: newSandbox(),
			reactors: failCreate("pods", apierrors.NewForbidden(corev1.Resource("pods"), testName,
				errors.New("exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1"))),
			wantErr:    "exceeded quota",
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantEvents: []string{`Warning FailedCreate Creating pod sb: pods "sb" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`},
			wantConds: []condSummary{want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonPodCreationForbidden,
				`pods "sb" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`)},
		},
		{
			name:       "create fails: FailedCreate event and ReconcilerError",
			sandbox:    newSandbox(),
			reactors:   failCreate("pods", errors.New("quota exceeded")),
			wantErr:    "quota exceeded",
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantEvents: []string{"Warning FailedCreate Creating pod sb: quota exceeded"},
			wantConds: []condSummary{want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonReconcilerError,
				"Error seen: quota exceeded")},
		},
		{
			name: "deleted pod of a running Sandbox is created again",
			sandbox: newSandbox(withStatus(agentsv1beta1.SandboxStatus{
				Replicas: 1, LabelSelector: testSelector, PodIPs: []string{"10.0.0.5"},
				Conditions: []metav1.Condition{cond(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service is not required")},
			})),
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantEvents: []string{"Normal PodCreated Created pod sb"},
			wantConds:  []condSummary{notReadyPending},
			wantStatus: runningStatus(),
			steady:     true,
		},
		{
			name:       "succeeded pod is not created again; Finished=True PodSucceeded",
			sandbox:    newSandbox(),
			cached:     []runtime.Object{newPod(testName, owned, phase(corev1.PodSucceeded))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{
				want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is Succeeded; Service is not required"),
				want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded"),
			},
			wantStatus: runningStatus(),
			steady:     true,
		},
		{
			name:    "failed pod is not created again; Finished=True PodFailed with the pod's message",
			sandbox: newSandbox(),
			cached: []runtime.Object{newPod(testName, owned, phase(corev1.PodFailed), func(p *corev1.Pod) {
				p.Status.Message = "OOMKilled"
			})},
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{
				want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is Failed; Service is not required"),
				want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodFailed, "Pod failed: OOMKilled"),
			},
			steady: true,
		},
		{
			name:       "terminating pod: not created again, not counted as a replica",
			sandbox:    newSandbox(withStatus(*runningStatus("10.0.0.5"))),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"), terminating)},
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady,
				"Pod is terminating; Service is not required")},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
		{
			name: "a running pod again drops a stale Finished condition",
			sandbox: newSandbox(withStatus(agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{
				cond(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded")}})),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			steady:     true,
		},
	})
}

// TestSyncPodSpecIsNotDriven: only metadata of an existing pod is driven; its spec is immutable
// and left as it is.
func TestSyncPodSpecIsNotDriven(t *testing.T) {
	sb := newSandbox()
	pod := newPod(testName, owned, readyPod("10.0.0.5"), func(p *corev1.Pod) { p.Spec.Containers[0].Image = "old" })
	f := newFixture(t, world{sandbox: sb, cached: []runtime.Object{pod}})
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := len(actions(&f.kube.Fake, "update", "pods")) + len(actions(&f.kube.Fake, "delete", "pods")); n != 0 {
		t.Errorf("pod writes = %d, want none", n)
	}
}
