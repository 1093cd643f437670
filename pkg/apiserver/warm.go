// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/record"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/manager"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

// newWarmChooser makes the process's warm chooser when the claim controller is enabled (nil
// otherwise): in every replica, leading or not, so that claims are bound at create time whichever
// replica their create reaches, and the claim controller of the leader adopts from the same one.
// Its caches, served by ours, start with the server and live as long as it does.
func newWarmChooser(generic *genericapiserver.GenericAPIServer, c CompletedConfig, ours *fastpath.InformerSource, events record.EventRecorder) (*warm.Chooser, error) {
	if c.Controllers == nil || !c.Controllers.Enabled(controllers.SandboxClaim) {
		return nil, nil
	}
	// The informers of our kinds list and watch in process; the factory wants a client all the same.
	client, err := versioned.NewForConfig(generic.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	// Only warm-pool members can be chosen: a member leaves this cache when a claim takes it.
	members := ours.InformerFactory(client, nil, func(lo *metav1.ListOptions) { lo.LabelSelector = extensionsv1beta1.WarmPoolSandboxLabel })
	// Templates and pools: few, all cached.
	templates := ours.InformerFactory(client, manager.DropManagedFields, nil)
	chooser, err := warm.New(warm.Config{
		Sandboxes: members.Agents().V1beta1().Sandboxes(),
		Templates: templates.Extensions().V1beta1().SandboxTemplates(),
		WarmPools: templates.Extensions().V1beta1().SandboxWarmPools(),
		Events:    events,
		Tracer:    c.GenericConfig.TracerProvider,
		// Replicas choosing from the same members at once should seldom try the same one; a
		// single replica takes them oldest first.
		Spread: c.Controllers.LeaderElection.LeaderElect,
	})
	if err != nil {
		return nil, err
	}
	generic.AddPostStartHookOrDie("start-sandbox-warm-chooser", func(hook genericapiserver.PostStartHookContext) error {
		members.Start(hook.Done())
		templates.Start(hook.Done())
		go func() {
			<-hook.Done()
			members.Shutdown()
			templates.Shutdown()
		}()
		return nil
	})
	return chooser, nil
}
