// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

func hashOf(sb *agentsv1beta1.Sandbox) string { return objectmeta.NameHash(sb.Name) }

// podSelector selects the Sandbox's pod, and no other Sandbox's: it carries the Sandbox's UID.
func podSelector(sb *agentsv1beta1.Sandbox) map[string]string {
	return map[string]string{agentsv1beta1.SandboxUIDLabel: string(sb.UID)}
}

// identityLabels are the labels the controller puts on the Sandbox's pod whatever the template
// says: the UID that selects it, the name hash kept for compatibility and the Sandbox's
// launch-type (warm or cold, set by the API server) when it has one.
func identityLabels(sb *agentsv1beta1.Sandbox) map[string]string {
	labels := map[string]string{agentsv1beta1.SandboxUIDLabel: string(sb.UID), agentsv1beta1.SandboxNameHashLabel: hashOf(sb)}
	if lt, ok := sb.Labels[agentsv1beta1.SandboxLaunchTypeLabel]; ok {
		labels[agentsv1beta1.SandboxLaunchTypeLabel] = lt
	}
	return labels
}

// firstChildren reports whether sb's children are being made for the first time: no status has
// been written for it yet. They are routine steps of its start, which its status reports (Ready,
// PodScheduled), and get no event each; at hundreds of Sandboxes a second those events were a
// fifth of the main API's writes. A child made again later (lost, deleted, or after a suspend)
// is a transition and gets its event, as do failures and conflicts.
func firstChildren(sb *agentsv1beta1.Sandbox) bool {
	return len(sb.Status.Conditions) == 0
}

// conflict reports, as an event and as the error the Ready condition shows, that an object of the
// name a child needs exists and the Sandbox does not control it. The object is left as it is.
func (c *Controller) conflict(sb *agentsv1beta1.Sandbox, kind string, obj metav1.Object) error {
	err := objectmeta.OwnershipConflict(kind, obj)
	c.events.Event(sb, corev1.EventTypeWarning, agentsv1beta1.SandboxReasonOwnershipConflict, err.Error())
	return err
}

// podForbiddenError says the cluster refused to create the Sandbox's pod (a ResourceQuota, an
// admission policy): reported as Ready=False PodCreationForbidden with the cluster's message.
type podForbiddenError struct{ err error }

func (e *podForbiddenError) Error() string { return e.err.Error() }
func (e *podForbiddenError) Unwrap() error { return e.err }

func controllerRef(sb *agentsv1beta1.Sandbox) metav1.OwnerReference {
	return *metav1.NewControllerRef(sb, sandboxKind)
}

// podName is the Sandbox's pod: named after the Sandbox, or as its pod-name annotation says.
func podName(sb *agentsv1beta1.Sandbox) string {
	if n := sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; n != "" {
		return n
	}
	return sb.Name
}

// reconcileChildren creates or deletes the PVCs, pod and Service of a live Sandbox. It touches
// only children the Sandbox controls; an object of a wanted name that it does not control is
// reported and left as it is.
func (c *Controller) reconcileChildren(ctx context.Context, sb *agentsv1beta1.Sandbox) (children, error) {
	var state children
	// Claims first: the pod mounts them. Without them no pod is made, but status still reports
	// the pod and Service of the Sandbox that exist.
	if err := c.reconcilePVCs(ctx, sb); err != nil {
		state.pod, _ = c.ownedPod(sb)
		if svc, svcErr := c.services.Services(sb.Namespace).Get(sb.Name); svcErr == nil && objectmeta.OwnershipOf(svc, sandboxKind.GroupKind(), sb.UID) == objectmeta.Owned {
			state.service = svc
		}
		return state, err
	}
	pod, err := c.reconcilePod(ctx, sb)
	state.pod = pod
	svc, svcErr := c.reconcileService(ctx, sb)
	state.service = svc
	return state, errors.Join(err, svcErr)
}

// podOfName returns the pod of the Sandbox's pod name from the cache, whoever controls it; nil
// when there is none.
func (c *Controller) podOfName(sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	pod, err := c.pods.Pods(sb.Namespace).Get(podName(sb))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pod, err
}

// ownedPod returns the Sandbox's pod from the cache: the pod of its pod name that it controls
// (same Sandbox UID), nil when there is none.
func (c *Controller) ownedPod(sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	pod, err := c.podOfName(sb)
	if pod == nil || objectmeta.OwnershipOf(pod, sandboxKind.GroupKind(), sb.UID) != objectmeta.Owned {
		return nil, err
	}
	return pod, nil
}

func (c *Controller) reconcilePod(ctx context.Context, sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	pod, err := c.podOfName(sb)
	if err != nil {
		return nil, err
	}
	if pod != nil && objectmeta.OwnershipOf(pod, sandboxKind.GroupKind(), sb.UID) != objectmeta.Owned {
		return nil, c.conflict(sb, "Pod", pod)
	}

	if replicasOf(sb) == 0 {
		if pod != nil && pod.DeletionTimestamp == nil {
			if err := c.deletePod(ctx, pod); err != nil {
				return pod, err
			}
			c.events.Eventf(sb, corev1.EventTypeNormal, "Suspended", "Deleted pod %s; volumes are kept", pod.Name)
		}
		return pod, nil
	}
	if pod == nil {
		if n := sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; n != "" && n != sb.Name {
			// The pod this Sandbox was given is gone: fall back to one named after the Sandbox.
			// (A warm member claimed before its pod was made names its own pod: it is made below,
			// and the annotation stays, marking a warm launch.)
			return nil, c.clearPodNameAnnotation(ctx, sb)
		}
		return c.createPod(ctx, sb)
	}
	if pod.DeletionTimestamp != nil {
		// The old pod is still terminating; its deletion event brings the Sandbox back here.
		return pod, nil
	}
	return c.updatePodMetadata(ctx, sb, pod)
}

func (c *Controller) createPod(ctx context.Context, sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	pod := desiredPod(sb)
	created, err := c.kube.CoreV1().Pods(sb.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier attempt the cache has not seen yet (found by its controller
		// reference, not made twice), or by someone else (left alone): look at it.
		existing, getErr := c.kube.CoreV1().Pods(sb.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		if objectmeta.OwnershipOf(existing, sandboxKind.GroupKind(), sb.UID) != objectmeta.Owned {
			return nil, c.conflict(sb, "Pod", existing)
		}
		// Ours: its labels put back if someone took them (the cache sees only labelled pods).
		return c.updatePodMetadata(ctx, sb, existing)
	}
	if err != nil {
		c.events.Eventf(sb, corev1.EventTypeWarning, "FailedCreate", "Creating pod %s: %v", pod.Name, err)
		if apierrors.IsForbidden(err) {
			return nil, &podForbiddenError{err}
		}
		return nil, err
	}
	if c.firstStatusDelay > 0 {
		c.podStarting.Store(sb.Namespace+"/"+sb.Name, c.now().Add(c.firstStatusDelay))
	}
	// The status is still the one of the last pass: a Suspended condition means it was suspended.
	switch {
	case meta.FindStatusCondition(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionSuspended)) != nil:
		c.events.Event(sb, corev1.EventTypeNormal, "Resumed", "Created pod "+created.Name+" again")
	case !firstChildren(sb):
		c.events.Event(sb, corev1.EventTypeNormal, "PodCreated", "Created pod "+created.Name)
	}
	return created, nil
}

// desiredPod is the pod a Sandbox asks for: its pod template, the volumes of its claims, its
// identity labels and the propagated metadata with its bookkeeping.
func desiredPod(sb *agentsv1beta1.Sandbox) *corev1.Pod {
	tmpl := &sb.Spec.PodTemplate
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podName(sb),
			Namespace:       sb.Namespace,
			OwnerReferences: []metav1.OwnerReference{controllerRef(sb)},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	propagateMetadata(&pod.ObjectMeta, &tmpl.ObjectMeta, identityLabels(sb))
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		vol := corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: objectmeta.PVCName(vct.Name, sb.Name)},
		}}
		if i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == vct.Name }); i >= 0 {
			pod.Spec.Volumes[i] = vol
		} else {
			pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		}
	}
	return pod
}

// propagateMetadata puts the template's labels and annotations and the identity labels on obj.
// Keys the template set before (recorded in the propagated-* annotations) and no longer sets are
// removed; keys set by anybody else are left alone. It reports whether obj changed.
func propagateMetadata(obj *metav1.ObjectMeta, tmpl *agentsv1beta1.PodMetadata, identity map[string]string) bool {
	changed := false
	set := func(m *map[string]string, k, v string) {
		if cur, ok := (*m)[k]; ok && cur == v {
			return
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
		changed = true
	}
	unset := func(m map[string]string, k string) {
		if _, ok := m[k]; ok {
			delete(m, k)
			changed = true
		}
	}
	for _, k := range strings.Split(obj.Annotations[agentsv1beta1.SandboxPropagatedLabelsAnnotation], ",") {
		if _, keep := tmpl.Labels[k]; k != "" && !keep {
			unset(obj.Labels, k)
		}
	}
	for _, k := range strings.Split(obj.Annotations[agentsv1beta1.SandboxPropagatedAnnotationsAnnotation], ",") {
		if _, keep := tmpl.Annotations[k]; k != "" && !keep {
			unset(obj.Annotations, k)
		}
	}
	for k, v := range tmpl.Labels {
		if _, theirs := identity[k]; !theirs { // the identity labels always win
			set(&obj.Labels, k, v)
		}
	}
	for k, v := range tmpl.Annotations {
		set(&obj.Annotations, k, v)
	}
	for k, v := range identity {
		set(&obj.Labels, k, v)
	}
	for key, m := range map[string]map[string]string{
		agentsv1beta1.SandboxPropagatedLabelsAnnotation:      tmpl.Labels,
		agentsv1beta1.SandboxPropagatedAnnotationsAnnotation: tmpl.Annotations,
	} {
		if len(m) == 0 {
			unset(obj.Annotations, key)
		} else {
			set(&obj.Annotations, key, strings.Join(slices.Sorted(maps.Keys(m)), ","))
		}
	}
	return changed
}

// updatePodMetadata drives the metadata of the Sandbox's own pod back to the template and its
// identity labels (a pod made before the UID label existed gets it here, in one write).
func (c *Controller) updatePodMetadata(ctx context.Context, sb *agentsv1beta1.Sandbox, pod *corev1.Pod) (*corev1.Pod, error) {
	pod = pod.DeepCopy()
	if !propagateMetadata(&pod.ObjectMeta, &sb.Spec.PodTemplate.ObjectMeta, identityLabels(sb)) {
		return pod, nil
	}
	return c.kube.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{FieldManager: FieldManager})
}

func (c *Controller) clearPodNameAnnotation(ctx context.Context, sb *agentsv1beta1.Sandbox) error {
	patch := []byte(`{"metadata":{"annotations":{"` + agentsv1beta1.SandboxPodNameAnnotation + `":null}}}`)
	_, err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Patch(ctx, sb.Name, "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// deletePod deletes exactly this pod, not a successor of the same name.
func (c *Controller) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// deleteChildren deletes the pod and Service the Sandbox controls, and its PVCs too when
// withClaims (only when the Sandbox itself goes: suspend and expiry keep them). Objects of those
// names it does not control are not its children and are left alone. It reports whether the pod
// is gone.
func (c *Controller) deleteChildren(ctx context.Context, sb *agentsv1beta1.Sandbox, withClaims bool) (bool, error) {
	pod, err := c.ownedPod(sb)
	if err != nil {
		return false, err
	}
	var errs []error
	podGone := pod == nil
	if pod != nil && pod.DeletionTimestamp == nil {
		errs = append(errs, c.deletePod(ctx, pod))
	}
	if svc, err := c.services.Services(sb.Namespace).Get(sb.Name); err == nil && objectmeta.OwnershipOf(svc, sandboxKind.GroupKind(), sb.UID) == objectmeta.Owned {
		errs = append(errs, ignoreGone(c.kube.CoreV1().Services(sb.Namespace).Delete(ctx, svc.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &svc.UID}})))
	}
	if withClaims {
		for _, vct := range sb.Spec.VolumeClaimTemplates {
			pvc, err := c.pvcs.PersistentVolumeClaims(sb.Namespace).Get(objectmeta.PVCName(vct.Name, sb.Name))
			if err != nil || objectmeta.OwnershipOf(pvc, sandboxKind.GroupKind(), sb.UID) != objectmeta.Owned || pvc.DeletionTimestamp != nil {
				continue
			}
			errs = append(errs, ignoreGone(c.kube.CoreV1().PersistentVolumeClaims(sb.Namespace).Delete(ctx, pvc.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pvc.UID}})))
		}
	}
	return podGone, errors.Join(errs...)
}

// ignoreGone drops the errors of a delete whose object is already gone or was replaced since
// (the UID precondition failed): there is nothing left of ours to delete.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// reconcilePVCs makes one PVC per volume claim template. A claim of the wanted name that the
// Sandbox does not control is reported and left alone, and no pod is made. PVCs are never deleted
// here: they outlive suspension and expiry and go only with the Sandbox.
func (c *Controller) reconcilePVCs(ctx context.Context, sb *agentsv1beta1.Sandbox) error {
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		name := objectmeta.PVCName(vct.Name, sb.Name)
		pvc, err := c.pvcs.PersistentVolumeClaims(sb.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			// The cache only holds labelled claims: an unlabelled one of this name shows up as AlreadyExists.
			pvc, err = c.createPVC(ctx, sb, vct)
		}
		if err != nil {
			return err
		}
		if objectmeta.OwnershipOf(pvc, sandboxKind.GroupKind(), sb.UID) != objectmeta.Owned {
			return c.conflict(sb, "PersistentVolumeClaim", pvc)
		}
	}
	return nil
}

func (c *Controller) createPVC(ctx context.Context, sb *agentsv1beta1.Sandbox, vct agentsv1beta1.PersistentVolumeClaimTemplate) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            objectmeta.PVCName(vct.Name, sb.Name),
			Namespace:       sb.Namespace,
			Labels:          maps.Clone(vct.Labels),
			Annotations:     maps.Clone(vct.Annotations),
			OwnerReferences: []metav1.OwnerReference{controllerRef(sb)},
		},
		Spec: *vct.Spec.DeepCopy(),
	}
	if pvc.Labels == nil {
		pvc.Labels = map[string]string{}
	}
	pvc.Labels[agentsv1beta1.SandboxNameHashLabel] = hashOf(sb)
	created, err := c.kube.CoreV1().PersistentVolumeClaims(sb.Namespace).Create(ctx, pvc, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return c.kube.CoreV1().PersistentVolumeClaims(sb.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
	}
	if err != nil {
		c.events.Eventf(sb, corev1.EventTypeWarning, "FailedCreate", "Creating PersistentVolumeClaim %s: %v", pvc.Name, err)
		return nil, err
	}
	if !firstChildren(sb) {
		c.events.Eventf(sb, corev1.EventTypeNormal, "PersistentVolumeClaimCreated", "Created PersistentVolumeClaim %s", pvc.Name)
	}
	return created, nil
}

// reconcileService applies the tri-state spec.service: true creates a headless Service, false
// deletes the one the Sandbox controls, unset makes none and keeps driving one the Sandbox
// controls. A Service of the name that the Sandbox does not control is left alone: a conflict when
// one is asked for, and not the Sandbox's Service either way. It returns the Sandbox's Service,
// if any.
func (c *Controller) reconcileService(ctx context.Context, sb *agentsv1beta1.Sandbox) (*corev1.Service, error) {
	svc, err := c.services.Services(sb.Namespace).Get(sb.Name)
	if apierrors.IsNotFound(err) {
		svc, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	want := sb.Spec.Service
	switch {
	case svc == nil && (want == nil || !*want):
		return nil, nil
	case svc == nil:
		return c.createService(ctx, sb)
	case objectmeta.OwnershipOf(svc, sandboxKind.GroupKind(), sb.UID) != objectmeta.Owned:
		if want != nil && *want {
			return nil, c.conflict(sb, "Service", svc)
		}
		return nil, nil
	case want != nil && !*want:
		if svc.DeletionTimestamp == nil {
			return nil, ignoreGone(c.kube.CoreV1().Services(sb.Namespace).Delete(ctx, svc.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &svc.UID}}))
		}
		return nil, nil
	}
	return c.driveService(ctx, sb, svc)
}

func (c *Controller) createService(ctx context.Context, sb *agentsv1beta1.Sandbox) (*corev1.Service, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            sb.Name,
			Namespace:       sb.Namespace,
			Labels:          map[string]string{agentsv1beta1.SandboxNameHashLabel: hashOf(sb)},
			OwnerReferences: []metav1.OwnerReference{controllerRef(sb)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  podSelector(sb),
		},
	}
	created, err := c.kube.CoreV1().Services(sb.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := c.kube.CoreV1().Services(sb.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		if objectmeta.OwnershipOf(existing, sandboxKind.GroupKind(), sb.UID) != objectmeta.Owned {
			return nil, c.conflict(sb, "Service", existing)
		}
		return c.driveService(ctx, sb, existing)
	}
	if err != nil {
		c.events.Eventf(sb, corev1.EventTypeWarning, "FailedCreate", "Creating service %s: %v", svc.Name, err)
		return nil, err
	}
	if !firstChildren(sb) {
		c.events.Eventf(sb, corev1.EventTypeNormal, "ServiceCreated", "Created headless service %s", svc.Name)
	}
	return created, nil
}

// driveService puts the name hash label and the pod selector back on the Sandbox's own Service
// (one made before the UID selector existed moves to it here, after its pod got the label).
func (c *Controller) driveService(ctx context.Context, sb *agentsv1beta1.Sandbox, svc *corev1.Service) (*corev1.Service, error) {
	hash, selector := hashOf(sb), podSelector(sb)
	if svc.Labels[agentsv1beta1.SandboxNameHashLabel] == hash && maps.Equal(svc.Spec.Selector, selector) {
		return svc, nil
	}
	svc = svc.DeepCopy()
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	svc.Labels[agentsv1beta1.SandboxNameHashLabel] = hash
	svc.Spec.Selector = selector
	return c.kube.CoreV1().Services(svc.Namespace).Update(ctx, svc, metav1.UpdateOptions{FieldManager: FieldManager})
}
