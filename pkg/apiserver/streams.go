// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// clusterEvents records Events in the cluster from every replica (the controllers' recorder runs
// in the leader only): those of exec and attach sessions, and the SandboxAdopted events of claims
// bound at create time. nil without a cluster connection.
func clusterEvents(generic *genericapiserver.GenericAPIServer, kubeConfig *restclient.Config) record.EventRecorder {
	if kubeConfig == nil {
		return nil
	}
	client, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		klog.ErrorS(err, "Stream sessions and claims bound at create time will record no Events")
		return nil
	}
	broadcaster := record.NewBroadcaster()
	generic.AddPostStartHookOrDie("start-sandbox-events", func(hook genericapiserver.PostStartHookContext) error {
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		go func() {
			<-hook.Done()
			broadcaster.Shutdown()
		}()
		return nil
	})
	// Stream sessions name their Sandbox by an ObjectReference; claims are resolved by our scheme.
	return broadcaster.NewRecorder(Scheme, corev1.EventSource{Component: "sandbox-apiserver"})
}
