// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// apiServices are the APIServices of sandbox-apiserver (artifacts/local/apiservices.yaml).
var apiServices = []string{
	"v1beta1.agents.x-k8s.io",
	"v1alpha1.agents.x-k8s.io",
	"v1beta1.extensions.agents.x-k8s.io",
	"v1alpha1.extensions.agents.x-k8s.io",
}

var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// openAPIKinds are the kinds each served version must show in kube-apiserver's aggregated
// OpenAPI before start returns: kubectl explain and apply --validate=strict read them there.
var (
	openAPIKinds = []schema.GroupKind{
		{Group: "agents.x-k8s.io", Kind: "Sandbox"},
		{Group: "extensions.agents.x-k8s.io", Kind: "SandboxClaim"},
		{Group: "extensions.agents.x-k8s.io", Kind: "SandboxTemplate"},
		{Group: "extensions.agents.x-k8s.io", Kind: "SandboxWarmPool"},
	}
	openAPIVersions = []string{"v1beta1", "v1alpha1"}
)

// waitAPIServices waits until every APIService of sandbox-apiserver is Available, at most
// APIServiceTimeout, and fails (stopping sandbox-apiserver) when it exits meanwhile.
func (p *Plane) waitAPIServices(ctx context.Context) error {
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	p.Log("waiting up to %s for the APIServices to be Available", seconds(p.Config.APIServiceTimeout))
	// kube-apiserver checks an APIService that failed its check again after a back-off that grows
	// to some seconds while the server starts; a change to the object has it checked at once, now
	// that the server answers.
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"sandbox-apiserver.dev/server-started":%q}}}`,
		time.Now().UTC().Format(time.RFC3339))
	for _, name := range apiServices {
		if _, err := cl.dynamic.Resource(apiServiceResource).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("APIService %s: %w", name, err)
		}
	}
	var messages []string
	err = poll(ctx, p.pollInterval(), p.Config.APIServiceTimeout, func() (bool, error) {
		if server, err := p.Config.Component("sandbox-apiserver"); err == nil {
			if _, ok := p.runner().Running(server); !ok {
				return false, p.fail("sandbox-apiserver", "exited while waiting for the APIServices")
			}
		}
		messages = messages[:0]
		for _, name := range apiServices {
			u, err := cl.dynamic.Resource(apiServiceResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				messages = append(messages, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			if ok, msg := apiServiceAvailable(u); !ok {
				messages = append(messages, name+": "+msg)
			}
		}
		return len(messages) == 0, nil
	})
	if errorsIsTimeout(err) {
		for _, m := range messages {
			fmt.Fprintf(os.Stderr, "    %s\n", m)
		}
		return p.serverFailed(ctx, fmt.Sprintf("APIServices not Available after %s", seconds(p.Config.APIServiceTimeout)))
	}
	if err != nil {
		return err
	}
	p.Log("APIServices Available: %s", strings.Join(apiServices, " "))
	return nil
}

// apiServiceAvailable reads an APIService's Available condition, and its message when it is not
// True.
func apiServiceAvailable(u *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Available" {
			continue
		}
		if m["status"] == "True" {
			return true, ""
		}
		return false, fmt.Sprintf("%v (%v)", m["message"], m["reason"])
	}
	return false, "no Available condition yet"
}

// openAPIMissing lists each kind and version that kube-apiserver's aggregated OpenAPI v2 (v2) or
// v3 (v3, by group/version path) does not describe yet. The definitions carry their kind as
// x-kubernetes-group-version-kind, keys in this order. kube-apiserver aggregates a new
// APIService's OpenAPI some seconds after it is Available; until then kubectl explain finds no
// such resource.
func openAPIMissing(v2 []byte, v3 func(group, version string) []byte) []string {
	gvk := func(group, kind, version string) []byte {
		return fmt.Appendf(nil, `"group":%q,"kind":%q,"version":%q`, group, kind, version)
	}
	var missing []string
	for _, v := range openAPIVersions {
		for _, k := range openAPIKinds {
			if !bytes.Contains(v2, gvk(k.Group, k.Kind, v)) {
				missing = append(missing, fmt.Sprintf("v2 %s/%s %s", k.Group, v, k.Kind))
			}
		}
	}
	for _, v := range openAPIVersions {
		docs := map[string][]byte{}
		for _, k := range openAPIKinds {
			doc, ok := docs[k.Group]
			if !ok {
				doc = v3(k.Group, v)
				docs[k.Group] = doc
			}
			if !bytes.Contains(doc, gvk(k.Group, k.Kind, v)) {
				missing = append(missing, fmt.Sprintf("v3 %s/%s %s", k.Group, v, k.Kind))
			}
		}
	}
	return missing
}

// waitOpenAPI waits until kube-apiserver's OpenAPI v2 and v3 describe every kind in both
// versions, at most APIServiceTimeout.
func (p *Plane) waitOpenAPI(ctx context.Context) error {
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	rest := cl.kube.Discovery().RESTClient()
	get := func(path string) []byte {
		b, err := rest.Get().AbsPath(path).SetHeader("Accept", "application/json").Do(ctx).Raw()
		if err != nil {
			return nil
		}
		return b
	}
	var missing []string
	err = poll(ctx, p.pollInterval(), p.Config.APIServiceTimeout, func() (bool, error) {
		missing = openAPIMissing(get("/openapi/v2"), func(group, version string) []byte {
			return get("/openapi/v3/apis/" + group + "/" + version)
		})
		return len(missing) == 0, nil
	})
	if errorsIsTimeout(err) {
		p.Log("ERROR: not in kube-apiserver's OpenAPI after %s:", seconds(p.Config.APIServiceTimeout))
		fmt.Fprintf(os.Stderr, "    %s\n", strings.Join(missing, "\n    "))
		return p.serverFailed(ctx, fmt.Sprintf("OpenAPI not aggregated after %s", seconds(p.Config.APIServiceTimeout)))
	}
	if err != nil {
		return err
	}
	p.Log("kube-apiserver's OpenAPI v2 and v3 describe every kind in both versions")
	return nil
}

// serverFailed reports a server that does not serve its APIs: the end of its log, and it is
// stopped, when it runs here; its pods when the chart installed it.
func (p *Plane) serverFailed(ctx context.Context, msg string) error {
	if p.Config.Mode != ModeChart {
		return p.fail("sandbox-apiserver", msg)
	}
	p.Log("ERROR: sandbox-apiserver (the chart's): %s", msg)
	p.describeChart(ctx)
	return ErrReported
}

// seconds prints a duration as the knobs give it (120s).
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }
