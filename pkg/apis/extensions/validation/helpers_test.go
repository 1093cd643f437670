// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// want is one expected error: its type and its field path.
type want struct {
	Type field.ErrorType
	Path string
}

// expectErrors fails the test unless errs are exactly the expected errors, in any order.
func expectErrors(t *testing.T, errs field.ErrorList, expected ...want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, string(e.Type)+" "+e.Field)
	}
	exp := make([]string, 0, len(expected))
	for _, w := range expected {
		exp = append(exp, string(w.Type)+" "+w.Path)
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors differ\n got: %q\nwant: %q\nfull errors: %v", got, exp, errs)
	}
}

func required(p string) want     { return want{field.ErrorTypeRequired, p} }
func invalid(p string) want      { return want{field.ErrorTypeInvalid, p} }
func notSupported(p string) want { return want{field.ErrorTypeNotSupported, p} }
func duplicate(p string) want    { return want{field.ErrorTypeDuplicate, p} }
func forbidden(p string) want    { return want{field.ErrorTypeForbidden, p} }

func condition(typ, reason string) metav1.Condition {
	return metav1.Condition{
		Type:               typ,
		Status:             metav1.ConditionTrue,
		Reason:             reason,
		LastTransitionTime: metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

// podTemplate is a pod template with one container that mounts the volume claim template
// "workspace".
func podTemplate() agents.PodTemplate {
	return agents.PodTemplate{
		ObjectMeta: agents.PodMetadata{Labels: map[string]string{"app": "notebook"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:         "my-container",
				Image:        "busybox",
				Command:      []string{"/bin/sh", "-c", "sleep 36000"},
				VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}},
			}},
		},
	}
}

func volumeClaimTemplate(name string) agents.PersistentVolumeClaimTemplate {
	return agents.PersistentVolumeClaimTemplate{
		EmbeddedObjectMetadata: agents.EmbeddedObjectMetadata{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
}

func notFound(p string) want { return want{field.ErrorTypeNotFound, p} }
