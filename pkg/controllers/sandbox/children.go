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
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/naming"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/ownership"
)

func hashOf(sb *agentsv1beta1.Sandbox) string { return naming.NameHash(sb.Name) }

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

// reconcileChildren creates, adopts or deletes the PVCs, pod and Service of a live Sandbox.
func (c *Controller) reconcileChildren(ctx context.Context, sb *agentsv1beta1.Sandbox) (children, error) {
	var state children
	// Claims first: the pod mounts them. Without them no pod is made, but status still reports
	// the pod and Service that exist.
	if err := c.reconcilePVCs(ctx, sb); err != nil {
		state.pod, _ = c.currentPod(sb)
		if svc, svcErr := c.services.Services(sb.Namespace).Get(sb.Name); svcErr == nil && ownership.Of(svc, sb.UID) != ownership.OwnedByOther {
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

// currentPod returns the Sandbox's pod from the cache, nil when there is none.
func (c *Controller) currentPod(sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	pod, err := c.pods.Pods(sb.Namespace).Get(podName(sb))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pod, err
}

func (c *Controller) reconcilePod(ctx context.Context, sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	pod, err := c.currentPod(sb)
	if err != nil {
		return nil, err
	}
	if pod != nil {
		switch ownership.Of(pod, sb.UID) {
		case ownership.OwnedByOther:
			c.events.Eventf(sb, corev1.EventTypeWarning, "OwnershipConflict", "Pod %s is controlled by another object", pod.Name)
			return nil, ownership.Conflict("Pod", pod)
		case ownership.Unowned:
			return c.updatePodMetadata(ctx, sb, pod, true)
		}
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
		if sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] != "" {
			// The pod this Sandbox was given is gone: fall back to one named after the Sandbox.
			return nil, c.clearPodNameAnnotation(ctx, sb)
		}
		return c.createPod(ctx, sb)
	}
	if pod.DeletionTimestamp != nil {
		// The old pod is still terminating; its deletion event brings the Sandbox back here.
		return pod, nil
	}
	return c.updatePodMetadata(ctx, sb, pod, false)
}

func (c *Controller) createPod(ctx context.Context, sb *agentsv1beta1.Sandbox) (*corev1.Pod, error) {
	pod := desiredPod(sb)
	created, err := c.kube.CoreV1().Pods(sb.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier attempt the cache has not seen yet, or by someone else: look at it.
		existing, getErr := c.kube.CoreV1().Pods(sb.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		switch ownership.Of(existing, sb.UID) {
		case ownership.OwnedByOther:
			return nil, ownership.Conflict("Pod", existing)
		case ownership.Unowned:
			return c.updatePodMetadata(ctx, sb, existing, true)
		}
		return existing, nil
	}
	if err != nil {
		c.events.Eventf(sb, corev1.EventTypeWarning, "FailedCreate", "Creating pod %s: %v", pod.Name, err)
		return nil, err
	}
	if c.firstStatusDelay > 0 {
		c.podStarting.Store(sb.Namespace+"/"+sb.Name, c.now().Add(c.firstStatusDelay))
	}
	reason, msg := "PodCreated", "Created pod "+created.Name
	// The status is still the one of the last pass: a Suspended condition means it was suspended.
	if meta.FindStatusCondition(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionSuspended)) != nil {
		reason, msg = "Resumed", "Created pod "+created.Name+" again"
	}
	c.events.Event(sb, corev1.EventTypeNormal, reason, msg)
	return created, nil
}

// desiredPod is the pod a Sandbox asks for: its pod template, the volumes of its claims, the name
// hash label and the propagated metadata with its bookkeeping.
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
	propagateMetadata(&pod.ObjectMeta, &tmpl.ObjectMeta, hashOf(sb))
	copyLaunchType(&pod.ObjectMeta, sb)
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		vol := corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: naming.PVCName(vct.Name, sb.Name)},
		}}
		if i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == vct.Name }); i >= 0 {
			pod.Spec.Volumes[i] = vol
		} else {
			pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		}
	}
	return pod
}

// propagateMetadata puts the template's labels and annotations and the name hash label on obj.
// Keys the template set before (recorded in the propagated-* annotations) and no longer sets are
// removed; keys set by anybody else are left alone. It reports whether obj changed.
func propagateMetadata(obj *metav1.ObjectMeta, tmpl *agentsv1beta1.PodMetadata, hash string) bool {
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
		if k != agentsv1beta1.SandboxNameHashLabel { // the hash always wins
			set(&obj.Labels, k, v)
		}
	}
	for k, v := range tmpl.Annotations {
		set(&obj.Annotations, k, v)
	}
	set(&obj.Labels, agentsv1beta1.SandboxNameHashLabel, hash)
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

// copyLaunchType puts the Sandbox's launch-type label (warm or cold, set by the API server) on its
// pod, and reports whether it changed. A Sandbox without one leaves the pod as it is.
func copyLaunchType(obj *metav1.ObjectMeta, sb *agentsv1beta1.Sandbox) bool {
	lt, ok := sb.Labels[agentsv1beta1.SandboxLaunchTypeLabel]
	if !ok || obj.Labels[agentsv1beta1.SandboxLaunchTypeLabel] == lt {
		return false
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels[agentsv1beta1.SandboxLaunchTypeLabel] = lt
	return true
}

// updatePodMetadata drives the pod's metadata back to the template, adopting it when unowned.
func (c *Controller) updatePodMetadata(ctx context.Context, sb *agentsv1beta1.Sandbox, pod *corev1.Pod, adopt bool) (*corev1.Pod, error) {
	pod = pod.DeepCopy()
	changed := propagateMetadata(&pod.ObjectMeta, &sb.Spec.PodTemplate.ObjectMeta, hashOf(sb))
	changed = copyLaunchType(&pod.ObjectMeta, sb) || changed
	if adopt {
		ownership.Adopt(pod, controllerRef(sb))
	}
	if !changed && !adopt {
		return pod, nil
	}
	updated, err := c.kube.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return pod, err
	}
	if adopt {
		c.events.Eventf(sb, corev1.EventTypeNormal, "PodAdopted", "Adopted pod %s", pod.Name)
	}
	return updated, nil
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

// deleteChildren deletes the pod and Service the Sandbox owns, and its PVCs too when withClaims
// (only when the Sandbox itself goes: suspend and expiry keep them). It reports whether the pod is
// gone.
func (c *Controller) deleteChildren(ctx context.Context, sb *agentsv1beta1.Sandbox, withClaims bool) (bool, error) {
	pod, err := c.currentPod(sb)
	if err != nil {
		return false, err
	}
	var errs []error
	podGone := pod == nil
	if pod != nil && ownership.Of(pod, sb.UID) == ownership.Owned {
		if pod.DeletionTimestamp == nil {
			errs = append(errs, c.deletePod(ctx, pod))
		}
	} else {
		podGone = true // not ours to wait for
	}
	if svc, err := c.services.Services(sb.Namespace).Get(sb.Name); err == nil && ownership.Of(svc, sb.UID) == ownership.Owned {
		errs = append(errs, ignoreGone(c.kube.CoreV1().Services(sb.Namespace).Delete(ctx, svc.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &svc.UID}})))
	}
	if withClaims {
		for _, vct := range sb.Spec.VolumeClaimTemplates {
			pvc, err := c.pvcs.PersistentVolumeClaims(sb.Namespace).Get(naming.PVCName(vct.Name, sb.Name))
			if err != nil || ownership.Of(pvc, sb.UID) != ownership.Owned || pvc.DeletionTimestamp != nil {
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

// reconcilePVCs makes one PVC per volume claim template, adopting unowned ones. PVCs are never
// deleted here: they outlive suspension and expiry and go only with the Sandbox.
func (c *Controller) reconcilePVCs(ctx context.Context, sb *agentsv1beta1.Sandbox) error {
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		name := naming.PVCName(vct.Name, sb.Name)
		pvc, err := c.pvcs.PersistentVolumeClaims(sb.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			// The cache only holds labelled claims: an unlabelled one of this name shows up as AlreadyExists.
			pvc, err = c.createPVC(ctx, sb, vct)
		}
		if err != nil {
			return err
		}
		switch ownership.Of(pvc, sb.UID) {
		case ownership.OwnedByOther:
			c.events.Eventf(sb, corev1.EventTypeWarning, "OwnershipConflict", "PersistentVolumeClaim %s is controlled by another object", name)
			return ownership.Conflict("PersistentVolumeClaim", pvc)
		case ownership.Unowned:
			pvc = pvc.DeepCopy()
			ownership.Adopt(pvc, controllerRef(sb))
			if pvc.Labels == nil {
				pvc.Labels = map[string]string{}
			}
			pvc.Labels[agentsv1beta1.SandboxNameHashLabel] = hashOf(sb)
			if _, err := c.kube.CoreV1().PersistentVolumeClaims(sb.Namespace).Update(ctx, pvc, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
				return err
			}
			c.events.Eventf(sb, corev1.EventTypeNormal, "PersistentVolumeClaimAdopted", "Adopted PersistentVolumeClaim %s", name)
		}
	}
	return nil
}

func (c *Controller) createPVC(ctx context.Context, sb *agentsv1beta1.Sandbox, vct agentsv1beta1.PersistentVolumeClaimTemplate) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            naming.PVCName(vct.Name, sb.Name),
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
	c.events.Eventf(sb, corev1.EventTypeNormal, "PersistentVolumeClaimCreated", "Created PersistentVolumeClaim %s", pvc.Name)
	return created, nil
}

// reconcileService applies the tri-state spec.service: true creates or adopts a headless Service,
// false deletes only the one the Sandbox owns, unset leaves an existing one alone and makes none.
// It returns the Service the Sandbox uses, if any.
func (c *Controller) reconcileService(ctx context.Context, sb *agentsv1beta1.Sandbox) (*corev1.Service, error) {
	svc, err := c.services.Services(sb.Namespace).Get(sb.Name)
	if apierrors.IsNotFound(err) {
		svc, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	want := sb.Spec.Service
	if svc == nil {
		if want == nil || !*want {
			return nil, nil
		}
		return c.createService(ctx, sb)
	}
	state := ownership.Of(svc, sb.UID)
	switch {
	case state == ownership.OwnedByOther:
		if want != nil && !*want {
			return nil, nil
		}
		c.events.Eventf(sb, corev1.EventTypeWarning, "OwnershipConflict", "Service %s is controlled by another object", svc.Name)
		return nil, ownership.Conflict("Service", svc)
	case want != nil && !*want:
		if state == ownership.Owned && svc.DeletionTimestamp == nil {
			return nil, ignoreGone(c.kube.CoreV1().Services(sb.Namespace).Delete(ctx, svc.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &svc.UID}}))
		}
		return nil, nil
	case state == ownership.Unowned && want == nil:
		// Kept for backward compatibility, not adopted.
		return svc, nil
	case state == ownership.Unowned && svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != "":
		return nil, errors.New("service " + svc.Name + " exists with a cluster IP; a Sandbox's Service must be headless (clusterIP: None)")
	}
	return c.driveService(ctx, sb, svc, state == ownership.Unowned)
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
			Selector:  map[string]string{agentsv1beta1.SandboxNameHashLabel: hashOf(sb)},
		},
	}
	created, err := c.kube.CoreV1().Services(sb.Namespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := c.kube.CoreV1().Services(sb.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		if ownership.Of(existing, sb.UID) == ownership.OwnedByOther {
			return nil, ownership.Conflict("Service", existing)
		}
		return c.driveService(ctx, sb, existing, ownership.Of(existing, sb.UID) == ownership.Unowned)
	}
	if err != nil {
		c.events.Eventf(sb, corev1.EventTypeWarning, "FailedCreate", "Creating service %s: %v", svc.Name, err)
		return nil, err
	}
	c.events.Eventf(sb, corev1.EventTypeNormal, "ServiceCreated", "Created headless service %s", svc.Name)
	return created, nil
}

// driveService puts the name hash label and selector back on a Service, adopting it when asked.
func (c *Controller) driveService(ctx context.Context, sb *agentsv1beta1.Sandbox, svc *corev1.Service, adopt bool) (*corev1.Service, error) {
	hash := hashOf(sb)
	if !adopt && svc.Labels[agentsv1beta1.SandboxNameHashLabel] == hash &&
		len(svc.Spec.Selector) == 1 && svc.Spec.Selector[agentsv1beta1.SandboxNameHashLabel] == hash {
		return svc, nil
	}
	svc = svc.DeepCopy()
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	svc.Labels[agentsv1beta1.SandboxNameHashLabel] = hash
	svc.Spec.Selector = map[string]string{agentsv1beta1.SandboxNameHashLabel: hash}
	if adopt {
		ownership.Adopt(svc, controllerRef(sb))
	}
	updated, err := c.kube.CoreV1().Services(svc.Namespace).Update(ctx, svc, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	if adopt {
		c.events.Eventf(sb, corev1.EventTypeNormal, "ServiceAdopted", "Adopted service %s", svc.Name)
	}
	return updated, nil
}
