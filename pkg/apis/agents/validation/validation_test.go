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
	"k8s.io/utils/ptr"

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
func notFound(p string) want     { return want{field.ErrorTypeNotFound, p} }
func tooLong(p string) want      { return want{field.ErrorTypeTooLong, p} }

func volumeClaimTemplate(name string) agents.PersistentVolumeClaimTemplate {
	return agents.PersistentVolumeClaimTemplate{
		EmbeddedObjectMetadata: agents.EmbeddedObjectMetadata{Name: name, Labels: map[string]string{"tier": "data"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
}

func validSandbox() *agents.Sandbox {
	return &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-with-storage", Namespace: "default", ResourceVersion: "1"},
		Spec: agents.SandboxSpec{
			PodTemplate: agents.PodTemplate{
				ObjectMeta: agents.PodMetadata{
					Labels:      map[string]string{"app": "my-agent"},
					Annotations: map[string]string{"example.com/owner": "team-a"},
				},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "agent",
						Image: "ghcr.io/example/agent:latest",
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						Env:   []corev1.EnvVar{{Name: "MODE", Value: "test"}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "work", MountPath: "/work"},
							{Name: "scratch", MountPath: "/tmp"},
						},
					}},
					Volumes: []corev1.Volume{{
						Name:         "scratch",
						VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
					}},
					RestartPolicy: corev1.RestartPolicyNever,
				},
			},
			VolumeClaimTemplates: []agents.PersistentVolumeClaimTemplate{volumeClaimTemplate("work")},
			Lifecycle:            agents.Lifecycle{ShutdownPolicy: ptr.To(agents.ShutdownPolicyRetain)},
			Replicas:             ptr.To[int32](1),
			Service:              ptr.To(true),
		},
	}
}

const (
	podSpec    = "spec.podTemplate.spec"
	container0 = podSpec + ".containers[0]"
	vct0       = "spec.volumeClaimTemplates[0]"
)

func TestValidateSandbox(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *agents.Sandbox)
		want   []want
	}{
		{name: "valid", mutate: func(s *agents.Sandbox) {}},

		// metadata
		{name: "name is a DNS-1035 label", mutate: func(s *agents.Sandbox) { s.Name = "a1-b2" }},
		{name: "name missing", mutate: func(s *agents.Sandbox) { s.Name = "" },
			want: []want{required("metadata.name")}},
		{name: "name starts with a digit (fine for a Pod, not for the Service)", mutate: func(s *agents.Sandbox) { s.Name = "1sandbox" },
			want: []want{invalid("metadata.name")}},
		{name: "name with a dot (a subdomain, not a label)", mutate: func(s *agents.Sandbox) { s.Name = "my.sandbox" },
			want: []want{invalid("metadata.name")}},
		{name: "name of 63 characters", mutate: func(s *agents.Sandbox) { s.Name = "a" + strings.Repeat("b", 62) }},
		{name: "name of 64 characters", mutate: func(s *agents.Sandbox) { s.Name = "a" + strings.Repeat("b", 63) },
			want: []want{invalid("metadata.name")}},
		{name: "namespace missing", mutate: func(s *agents.Sandbox) { s.Namespace = "" },
			want: []want{required("metadata.namespace")}},

		// shutdownTime: a zero time would be stored as null and read back as no shutdown
		{name: "shutdownTime in the past", mutate: func(s *agents.Sandbox) {
			s.Spec.ShutdownTime = &metav1.Time{Time: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}
		}},
		{name: "shutdownTime the zero time", mutate: func(s *agents.Sandbox) { s.Spec.ShutdownTime = &metav1.Time{} },
			want: []want{invalid("spec.shutdownTime")}},

		// idleTimeout: unset or at least the minimum
		{name: "idleTimeout of the minimum", mutate: func(s *agents.Sandbox) { s.Spec.IdleTimeout = &metav1.Duration{Duration: 10 * time.Second} }},
		{name: "idleTimeout below the minimum", mutate: func(s *agents.Sandbox) { s.Spec.IdleTimeout = &metav1.Duration{Duration: 9 * time.Second} },
			want: []want{invalid("spec.idleTimeout")}},
		{name: "idleTimeout negative", mutate: func(s *agents.Sandbox) { s.Spec.IdleTimeout = &metav1.Duration{Duration: -time.Minute} },
			want: []want{invalid("spec.idleTimeout")}},

		// pod template metadata
		{name: "pod label key invalid", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.ObjectMeta.Labels["bad key"] = "x" },
			want: []want{invalid("spec.podTemplate.metadata.labels")}},
		{name: "pod label value invalid", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.ObjectMeta.Labels["app"] = "-x-" },
			want: []want{invalid("spec.podTemplate.metadata.labels")}},
		{name: "pod annotation key invalid", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.ObjectMeta.Annotations["a/b/c"] = "x" },
			want: []want{invalid("spec.podTemplate.metadata.annotations")}},
		{name: "pod annotation value free-form", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.ObjectMeta.Annotations["example.com/owner"] = "any value, even: spaces / slashes"
		}},

		// containers
		{name: "no containers", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers = nil },
			want: []want{required(podSpec + ".containers")}},
		{name: "container name missing", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Name = "" },
			want: []want{required(container0 + ".name")}},
		{name: "container name not a DNS-1123 label", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Name = "Agent" },
			want: []want{invalid(container0 + ".name")}},
		{name: "init, regular and ephemeral containers with distinct names", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
			s.Spec.PodTemplate.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
			}}
		}},
		{name: "two containers with one name", mutate: func(s *agents.Sandbox) {
			c := s.Spec.PodTemplate.Spec.Containers[0]
			c.VolumeMounts = nil
			s.Spec.PodTemplate.Spec.Containers = append(s.Spec.PodTemplate.Spec.Containers, c)
		}, want: []want{duplicate(podSpec + ".containers[1].name")}},
		{name: "init container named like a container", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "agent", Image: "busybox"}}
		}, want: []want{duplicate(container0 + ".name")}},
		{name: "ephemeral container named like a container", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "agent", Image: "busybox"},
			}}
		}, want: []want{duplicate(podSpec + ".ephemeralContainers[0].name")}},
		{name: "ephemeral container name invalid", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "de_bug", Image: "busybox"},
			}}
		}, want: []want{invalid(podSpec + ".ephemeralContainers[0].name")}},

		// images
		{name: "container without image", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Image = "" },
			want: []want{required(container0 + ".image")}},
		{name: "container with a blank image", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Image = "  " },
			want: []want{required(container0 + ".image")}},
		{name: "init container without image", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
		}, want: []want{required(podSpec + ".initContainers[0].image")}},
		{name: "ephemeral container without image is not checked", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"},
			}}
		}},

		// ports
		{name: "ports at the ends of the range", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.Containers[0].Ports = []corev1.ContainerPort{
				{ContainerPort: 1}, {ContainerPort: 65535, HostPort: 65535},
			}
		}},
		{name: "container port 0", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Ports[0].ContainerPort = 0 },
			want: []want{invalid(container0 + ".ports[0].containerPort")}},
		{name: "container port 65536", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Ports[0].ContainerPort = 65536 },
			want: []want{invalid(container0 + ".ports[0].containerPort")}},
		{name: "host port out of range", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Ports[0].HostPort = -1 },
			want: []want{invalid(container0 + ".ports[0].hostPort")}},
		{name: "port name invalid", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Ports[0].Name = "web_http" },
			want: []want{invalid(container0 + ".ports[0].name")}},
		{name: "init container port out of range", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox",
				Ports: []corev1.ContainerPort{{ContainerPort: 70000}}}}
		}, want: []want{invalid(podSpec + ".initContainers[0].ports[0].containerPort")}},

		// restart policy
		{name: "restartPolicy unset", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.RestartPolicy = "" }},
		{name: "restartPolicy OnFailure", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }},
		{name: "restartPolicy unknown", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.RestartPolicy = "Sometimes" },
			want: []want{notSupported(podSpec + ".restartPolicy")}},

		// env
		{name: "env name with dots and dashes", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Env[0].Name = "my.env-name" }},
		{name: "env name missing", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Env[0].Name = "" },
			want: []want{required(container0 + ".env[0].name")}},
		{name: "env name starting with a digit", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Env[0].Name = "1MODE" },
			want: []want{invalid(container0 + ".env[0].name")}},
		{name: "env name with '='", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].Env[0].Name = "A=B" },
			want: []want{invalid(container0 + ".env[0].name")}},
		{name: "init container env name invalid", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox",
				Env: []corev1.EnvVar{{Name: "NO SPACES"}}}}
		}, want: []want{invalid(podSpec + ".initContainers[0].env[0].name")}},

		// volumes
		{name: "volume name missing", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.Volumes[0].Name = ""
			s.Spec.PodTemplate.Spec.Containers[0].VolumeMounts = s.Spec.PodTemplate.Spec.Containers[0].VolumeMounts[:1]
		}, want: []want{required(podSpec + ".volumes[0].name")}},
		{name: "volume name not a DNS-1123 label", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.Volumes[0].Name = "Scratch"
			s.Spec.PodTemplate.Spec.Containers[0].VolumeMounts[1].Name = "Scratch"
		}, want: []want{invalid(podSpec + ".volumes[0].name")}},
		{name: "two volumes with one name", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.Volumes = append(s.Spec.PodTemplate.Spec.Volumes, s.Spec.PodTemplate.Spec.Volumes[0])
		}, want: []want{duplicate(podSpec + ".volumes[1].name")}},
		{name: "volume named like a volume claim template (replaced by its claim)", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.Volumes = append(s.Spec.PodTemplate.Spec.Volumes, corev1.Volume{
				Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
			})
		}},

		// volume mounts
		{name: "mount of an unknown volume", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].VolumeMounts[0].Name = "cache" },
			want: []want{notFound(container0 + ".volumeMounts[0].name")}},
		{name: "mount without a volume name", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].VolumeMounts[0].Name = "" },
			want: []want{required(container0 + ".volumeMounts[0].name")}},
		{name: "mount without a path", mutate: func(s *agents.Sandbox) { s.Spec.PodTemplate.Spec.Containers[0].VolumeMounts[0].MountPath = "" },
			want: []want{required(container0 + ".volumeMounts[0].mountPath")}},
		{name: "init container mounts a volume claim template", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/w"}}}}
		}},
		{name: "mount of a volume claim template that is not there", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates = nil
		}, want: []want{notFound(container0 + ".volumeMounts[0].name")}},

		// volume claim templates
		{name: "volume claim templates with every access mode", mutate: func(s *agents.Sandbox) {
			v := volumeClaimTemplate("cache")
			v.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{
				corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod,
			}
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, v)
		}},
		{name: "volume claim template name missing", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, volumeClaimTemplate(""))
		}, want: []want{required("spec.volumeClaimTemplates[1].metadata.name")}},
		{name: "volume claim template name not a DNS-1123 label", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, volumeClaimTemplate("my.cache"))
		}, want: []want{invalid("spec.volumeClaimTemplates[1].metadata.name")}},
		{name: "two volume claim templates with one name", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, volumeClaimTemplate("work"))
		}, want: []want{duplicate("spec.volumeClaimTemplates[1].metadata.name")}},
		{name: "volume claim template label invalid", mutate: func(s *agents.Sandbox) { s.Spec.VolumeClaimTemplates[0].Labels["tier"] = "not valid" },
			want: []want{invalid(vct0 + ".metadata.labels")}},
		{name: "volume claim template annotation invalid", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates[0].Annotations = map[string]string{"-bad": "x"}
		}, want: []want{invalid(vct0 + ".metadata.annotations")}},
		{name: "volume claim template without access modes", mutate: func(s *agents.Sandbox) { s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = nil },
			want: []want{required(vct0 + ".spec.accessModes")}},
		{name: "volume claim template with an unknown access mode", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, "WriteOnly"}
		}, want: []want{notSupported(vct0 + ".spec.accessModes[1]")}},
		{name: "volume claim template without storage request", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, want: []want{required(vct0 + ".spec.resources.requests[storage]")}},
		{name: "volume claim template with zero storage", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}, want: []want{invalid(vct0 + ".spec.resources.requests[storage]")}},
		{name: "volume claim template with negative storage", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("-1Gi")
		}, want: []want{invalid(vct0 + ".spec.resources.requests[storage]")}},

		// replicas
		{name: "replicas 0", mutate: func(s *agents.Sandbox) { s.Spec.Replicas = ptr.To[int32](0) }},
		{name: "replicas unset", mutate: func(s *agents.Sandbox) { s.Spec.Replicas = nil }},
		{name: "replicas 2", mutate: func(s *agents.Sandbox) { s.Spec.Replicas = ptr.To[int32](2) },
			want: []want{invalid("spec.replicas")}},
		{name: "replicas -1", mutate: func(s *agents.Sandbox) { s.Spec.Replicas = ptr.To[int32](-1) },
			want: []want{invalid("spec.replicas")}},

		// operatingMode, kept in step with replicas
		{name: "Running with replicas 1", mutate: func(s *agents.Sandbox) {
			s.Spec.Replicas, s.Spec.OperatingMode = ptr.To[int32](1), agents.OperatingModeRunning
		}},
		{name: "Suspended with replicas 0", mutate: func(s *agents.Sandbox) {
			s.Spec.Replicas, s.Spec.OperatingMode = ptr.To[int32](0), agents.OperatingModeSuspended
		}},
		{name: "Suspended with replicas 1", mutate: func(s *agents.Sandbox) {
			s.Spec.Replicas, s.Spec.OperatingMode = ptr.To[int32](1), agents.OperatingModeSuspended
		}, want: []want{invalid("spec.operatingMode")}},
		{name: "Running with replicas 0", mutate: func(s *agents.Sandbox) {
			s.Spec.Replicas, s.Spec.OperatingMode = ptr.To[int32](0), agents.OperatingModeRunning
		}, want: []want{invalid("spec.operatingMode")}},
		{name: "operatingMode unknown", mutate: func(s *agents.Sandbox) { s.Spec.OperatingMode = "Paused" },
			want: []want{notSupported("spec.operatingMode")}},
		{name: "replicas 2 is reported on replicas only", mutate: func(s *agents.Sandbox) {
			s.Spec.Replicas, s.Spec.OperatingMode = ptr.To[int32](2), agents.OperatingModeRunning
		}, want: []want{invalid("spec.replicas")}},

		// shutdown policy
		{name: "shutdownPolicy Delete", mutate: func(s *agents.Sandbox) { s.Spec.ShutdownPolicy = ptr.To(agents.ShutdownPolicyDelete) }},
		{name: "shutdownPolicy unset", mutate: func(s *agents.Sandbox) { s.Spec.ShutdownPolicy = nil }},
		{name: "shutdownPolicy unknown", mutate: func(s *agents.Sandbox) { s.Spec.ShutdownPolicy = ptr.To(agents.ShutdownPolicy("Forever")) },
			want: []want{notSupported("spec.shutdownPolicy")}},
		{name: "shutdownPolicy DeleteForeground is a claim policy only", mutate: func(s *agents.Sandbox) {
			s.Spec.ShutdownPolicy = ptr.To(agents.ShutdownPolicy("DeleteForeground"))
		}, want: []want{notSupported("spec.shutdownPolicy")}},

		// all errors at once
		{name: "several errors are all reported", mutate: func(s *agents.Sandbox) {
			s.Name = "Bad_Name"
			s.Spec.PodTemplate.Spec.Containers[0].Image = ""
			s.Spec.PodTemplate.Spec.Containers[0].Ports[0].ContainerPort = 0
			s.Spec.PodTemplate.Spec.Containers[0].VolumeMounts[0].Name = "missing"
			s.Spec.PodTemplate.Spec.RestartPolicy = "Sometimes"
			s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = nil
			s.Spec.Replicas = ptr.To[int32](5)
			s.Spec.ShutdownPolicy = ptr.To(agents.ShutdownPolicy("Later"))
		}, want: []want{
			invalid("metadata.name"),
			required(container0 + ".image"),
			invalid(container0 + ".ports[0].containerPort"),
			notFound(container0 + ".volumeMounts[0].name"),
			notSupported(podSpec + ".restartPolicy"),
			required(vct0 + ".spec.accessModes"),
			invalid("spec.replicas"),
			notSupported("spec.shutdownPolicy"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSandbox()
			tc.mutate(s)
			expectErrors(t, ValidateSandbox(s), tc.want...)
		})
	}
}

func TestValidateVolumeClaimNames(t *testing.T) {
	path := field.NewPath("spec", "volumeClaimTemplates")
	vcts := []agents.PersistentVolumeClaimTemplate{volumeClaimTemplate("work"), volumeClaimTemplate("")}
	cases := []struct {
		name    string
		sandbox string
		vcts    []agents.PersistentVolumeClaimTemplate
		want    []want
	}{
		{name: "valid, unnamed templates skipped", sandbox: "agent", vcts: vcts},
		{name: "no sandbox name yet", sandbox: "", vcts: vcts},
		{name: "longest claim name", sandbox: "s" + strings.Repeat("x", 247), vcts: vcts[:1]},
		{name: "claim name of 254 characters", sandbox: "s" + strings.Repeat("x", 248), vcts: vcts[:1],
			want: []want{tooLong("spec.volumeClaimTemplates[0].metadata.name")}},
		{name: "claim name not a subdomain", sandbox: "Agent", vcts: vcts[:1],
			want: []want{invalid("spec.volumeClaimTemplates[0].metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateVolumeClaimNames(tc.vcts, tc.sandbox, path), tc.want...)
		})
	}
}

func TestValidateSandboxUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *agents.Sandbox)
		want   []want
	}{
		{name: "unchanged", mutate: func(s *agents.Sandbox) {}},
		{name: "suspend", mutate: func(s *agents.Sandbox) { s.Spec.Replicas = ptr.To[int32](0) }},
		{name: "pod template labels and image change", mutate: func(s *agents.Sandbox) {
			s.Spec.PodTemplate.ObjectMeta.Labels["claim"] = "x"
			s.Spec.PodTemplate.Spec.Containers[0].Image = "ghcr.io/example/agent:v2"
		}},
		{name: "lifecycle and service change", mutate: func(s *agents.Sandbox) {
			s.Spec.ShutdownTime = &metav1.Time{Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}
			s.Spec.ShutdownPolicy = ptr.To(agents.ShutdownPolicyDelete)
			s.Spec.Service = ptr.To(false)
		}},
		{name: "new spec is validated", mutate: func(s *agents.Sandbox) { s.Spec.Replicas = ptr.To[int32](2) },
			want: []want{invalid("spec.replicas")}},
		{name: "volume claim template resized", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, want: []want{invalid("spec.volumeClaimTemplates")}},
		{name: "volume claim template added", mutate: func(s *agents.Sandbox) {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, volumeClaimTemplate("cache"))
		}, want: []want{invalid("spec.volumeClaimTemplates")}},
		{name: "name changed", mutate: func(s *agents.Sandbox) { s.Name = "other" },
			want: []want{invalid("metadata.name")}},
		{name: "resourceVersion missing", mutate: func(s *agents.Sandbox) { s.ResourceVersion = "" },
			want: []want{invalid("metadata.resourceVersion")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldS := validSandbox()
			newS := validSandbox()
			tc.mutate(newS)
			expectErrors(t, ValidateSandboxUpdate(newS, oldS), tc.want...)
		})
	}
}

func readyCondition() metav1.Condition {
	return metav1.Condition{
		Type:               "Ready",
		Status:             metav1.ConditionTrue,
		Reason:             "DependenciesReady",
		LastTransitionTime: metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestValidateSandboxStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *agents.Sandbox)
		want   []want
	}{
		{name: "running", mutate: func(s *agents.Sandbox) {
			s.Status = agents.SandboxStatus{
				Replicas:      1,
				Conditions:    []metav1.Condition{readyCondition()},
				LabelSelector: "agents.x-k8s.io/sandbox-name-hash=abc123",
				PodIPs:        []string{"10.0.0.7", "fd00::7"},
				Service:       "agent-with-storage",
				ServiceFQDN:   "agent-with-storage.default.svc.cluster.local",
			}
		}},
		{name: "suspended", mutate: func(s *agents.Sandbox) { s.Status.Replicas = 0 }},
		{name: "replicas 2", mutate: func(s *agents.Sandbox) { s.Status.Replicas = 2 },
			want: []want{invalid("status.replicas")}},
		{name: "replicas -1", mutate: func(s *agents.Sandbox) { s.Status.Replicas = -1 },
			want: []want{invalid("status.replicas")}},
		{name: "condition status unknown value", mutate: func(s *agents.Sandbox) {
			c := readyCondition()
			c.Status = "Maybe"
			s.Status.Conditions = []metav1.Condition{c}
		}, want: []want{notSupported("status.conditions[0].status")}},
		{name: "condition without reason", mutate: func(s *agents.Sandbox) {
			c := readyCondition()
			c.Reason = ""
			s.Status.Conditions = []metav1.Condition{c}
		}, want: []want{required("status.conditions[0].reason")}},
		{name: "condition without lastTransitionTime", mutate: func(s *agents.Sandbox) {
			c := readyCondition()
			c.LastTransitionTime = metav1.Time{}
			s.Status.Conditions = []metav1.Condition{c}
		}, want: []want{required("status.conditions[0].lastTransitionTime")}},
		{name: "selector unparsable", mutate: func(s *agents.Sandbox) { s.Status.LabelSelector = "a in (" },
			want: []want{invalid("status.selector")}},
		{name: "pod IP invalid", mutate: func(s *agents.Sandbox) { s.Status.PodIPs = []string{"10.0.0.1", "not-an-ip"} },
			want: []want{invalid("status.podIPs[1]")}},
		{name: "lastActivityTime", mutate: func(s *agents.Sandbox) { s.Status.LastActivityTime = &metav1.Time{Time: time.Now()} }},
		{name: "lastActivityTime the zero time", mutate: func(s *agents.Sandbox) { s.Status.LastActivityTime = &metav1.Time{} },
			want: []want{invalid("status.lastActivityTime")}},
		{name: "spec is not looked at", mutate: func(s *agents.Sandbox) { s.Spec.Replicas = ptr.To[int32](9) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldS := validSandbox()
			newS := validSandbox()
			tc.mutate(newS)
			expectErrors(t, ValidateSandboxStatusUpdate(newS, oldS), tc.want...)
		})
	}
}
