// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package manager

import (
	"reflect"
	"slices"
	"testing"

	"github.com/spf13/pflag"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
)

// TestSeedControllerFlags: the seed controller's flags parse and map onto these options.
func TestSeedControllerFlags(t *testing.T) {
	core := []string{controllers.Sandbox, controllers.NamespaceCleanup}
	cases := []struct {
		name          string
		args          []string
		wantRunning   []string
		wantNamespace string
		wantQPS       float32
		wantErr       bool
	}{
		{name: "defaults: every controller, the Lease in kube-system", wantRunning: controllers.All, wantNamespace: "kube-system", wantQPS: 200},
		{name: "--extensions as the seed deployment passes it", args: []string{"--leader-elect=true", "--extensions"},
			wantRunning: controllers.All, wantNamespace: "kube-system", wantQPS: 200},
		{name: "--extensions=false: core controllers only", args: []string{"--extensions=false"},
			wantRunning: core, wantNamespace: "kube-system", wantQPS: 200},
		{name: "--extensions=false leaves --controllers' own exclusions", args: []string{"--extensions=false", "--controllers=*,-namespacecleanup"},
			wantRunning: []string{controllers.Sandbox}, wantNamespace: "kube-system", wantQPS: 200},
		{name: "--leader-election-namespace places the Lease", args: []string{"--leader-election-namespace=sandbox-system"},
			wantRunning: controllers.All, wantNamespace: "sandbox-system", wantQPS: 200},
		{name: "empty --leader-election-namespace: --leader-elect-resource-namespace", args: []string{"--leader-election-namespace=", "--leader-elect-resource-namespace=ops"},
			wantRunning: controllers.All, wantNamespace: "ops", wantQPS: 200},
		{name: "--kube-api-qps=-1: no client-side limit", args: []string{"--kube-api-qps=-1", "--kube-api-burst=10"},
			wantRunning: controllers.All, wantNamespace: "kube-system", wantQPS: -1},
		{name: "--kube-api-qps=0 is refused", args: []string{"--kube-api-qps=0"}, wantErr: true},
		{name: "--kube-api-burst=0 is refused", args: []string{"--kube-api-burst=0"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parse %q: %v", tc.args, err)
			}
			errs := o.Validate()
			if tc.wantErr {
				if len(errs) == 0 {
					t.Fatalf("%q validated, want an error", tc.args)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("%q: %v", tc.args, errs)
			}
			var running []string
			for _, c := range controllers.All {
				if o.Enabled(c) {
					running = append(running, c)
				}
			}
			if !slices.Equal(running, tc.wantRunning) {
				t.Errorf("controllers running %q, want %q", running, tc.wantRunning)
			}
			if got := o.LeaseNamespace(); got != tc.wantNamespace {
				t.Errorf("Lease namespace %q, want %q", got, tc.wantNamespace)
			}
			if o.KubeAPIQPS != tc.wantQPS {
				t.Errorf("QPS %v, want %v", o.KubeAPIQPS, tc.wantQPS)
			}
		})
	}
}

// TestServerPeerFlags: --server-pod-namespace and --server-pod-labels make the peer of the
// server's pods, in their namespace only; one without the other, or a bad value, is refused.
func TestServerPeerFlags(t *testing.T) {
	cases := []struct {
		args    []string
		want    *networkingv1.NetworkPolicyPeer
		wantErr bool
	}{
		{args: nil},
		{args: []string{"--server-pod-namespace=sandbox-system", "--server-pod-labels=app.kubernetes.io/name=sandbox-apiserver"},
			want: &networkingv1.NetworkPolicyPeer{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "sandbox-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "sandbox-apiserver"}},
			}},
		{args: []string{"--server-pod-namespace=sandbox-system"}, wantErr: true},
		{args: []string{"--server-pod-labels=app=x"}, wantErr: true},
		{args: []string{"--server-pod-namespace=Not_A_Namespace", "--server-pod-labels=app=x"}, wantErr: true},
		{args: []string{"--server-pod-namespace=ns", "--server-pod-labels=app=bad value"}, wantErr: true},
	}
	for _, tc := range cases {
		o := NewOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("parse %q: %v", tc.args, err)
		}
		if errs := o.Validate(); (len(errs) > 0) != tc.wantErr {
			t.Errorf("%q: errors %v; want errors: %v", tc.args, errs, tc.wantErr)
			continue
		}
		if got := o.ServerPeer(); !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: peer %+v; want %+v", tc.args, got, tc.want)
		}
	}
}
