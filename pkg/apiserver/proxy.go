// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxstream"
)

// longRunning marks watches, the proxy and the streaming subresources as long-running, as
// kube-apiserver does for their pods/* counterparts: a proxied stream or WebSocket is not cut at
// the request timeout and does not hold an in-flight slot.
var longRunning = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch"),
	sets.NewString("proxy", "exec", "attach", "log", "portforward"))

// sandboxPods watches the pods of Sandboxes (those with the Sandbox UID label) so the proxy finds
// a Sandbox's pod without a request to the cluster per proxied request. Every replica runs it,
// whether or not it runs the controllers. nil getter without a cluster connection.
func sandboxPods(generic *genericapiserver.GenericAPIServer, kubeConfig *restclient.Config) (sandboxproxy.PodGetter, error) {
	if kubeConfig == nil {
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		return nil, fmt.Errorf("making the proxy's pod client: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = agentsv1beta1.SandboxUIDLabel
	}))
	informer := factory.Core().V1().Pods().Informer()
	if err := informer.SetTransform(proxiedPodFields); err != nil {
		return nil, err
	}
	lister := factory.Core().V1().Pods().Lister()
	generic.AddPostStartHookOrDie("start-sandbox-proxy-pods", func(hook genericapiserver.PostStartHookContext) error {
		factory.Start(hook.Done())
		return nil
	})
	return func(namespace, name string) (*corev1.Pod, error) {
		pod, err := lister.Pods(namespace).Get(name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil && sandboxproxy.PodReady(pod) {
			return pod, nil
		}
		// The proxy looks for the pod only once the Waker has seen the Sandbox Ready, which the
		// controller reports from its own pod cache: a missing or unready pod here is this cache
		// lagging behind that one (just after a wake), so the cluster is asked once.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		live, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return live, err
	}, nil
}

// proxiedPodFields keeps of a pod only what the proxy and the streams read (see sandboxproxy.Target): this cache
// holds every sandbox's pod in every replica, beside the controllers' own.
func proxiedPodFields(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a deleted-final-state tombstone
	}
	slim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			DeletionTimestamp: pod.DeletionTimestamp, OwnerReferences: pod.OwnerReferences,
		},
		Spec:   corev1.PodSpec{HostNetwork: pod.Spec.HostNetwork},
		Status: corev1.PodStatus{Phase: pod.Status.Phase, PodIP: pod.Status.PodIP, Conditions: pod.Status.Conditions},
	}
	// The streaming subresources default the container this annotation names.
	if d, ok := pod.Annotations[sandboxstream.DefaultContainerAnnotation]; ok {
		slim.Annotations = map[string]string{sandboxstream.DefaultContainerAnnotation: d}
	}
	for _, c := range pod.Spec.Containers {
		slim.Spec.Containers = append(slim.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
	}
	return slim, nil
}
