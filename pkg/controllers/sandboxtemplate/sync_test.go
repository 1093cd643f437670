// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxtemplate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

const ns = "team-a"

type fixture struct {
	kube       *kubefake.Clientset
	client     *fake.Clientset
	events     *record.FakeRecorder
	namespaces cache.Indexer
	ctrl       *Controller
}

// newFixture builds the controller on informers that are never started: their indexers hold
// exactly the objects given, as a synced cache would.
func newFixture(t *testing.T, templates []*extensionsv1beta1.SandboxTemplate, policies []*networkingv1.NetworkPolicy) *fixture {
	t.Helper()
	var kubeObjs, ourObjs []runtime.Object
	for _, p := range policies {
		kubeObjs = append(kubeObjs, p)
	}
	for _, tm := range templates {
		ourObjs = append(ourObjs, tm)
	}
	f := &fixture{
		kube:   kubefake.NewClientset(kubeObjs...),
		client: fake.NewSimpleClientset(ourObjs...),
		events: record.NewFakeRecorder(100),
	}
	kubeInformers := informers.NewSharedInformerFactory(f.kube, 0)
	ourInformers := externalversions.NewSharedInformerFactory(f.client, 0)
	tInf := ourInformers.Extensions().V1beta1().SandboxTemplates()
	npInf := kubeInformers.Networking().V1().NetworkPolicies()
	nsInf := kubeInformers.Core().V1().Namespaces()
	f.namespaces = nsInf.Informer().GetIndexer()
	ctrl, err := New(Config{Kube: f.kube, Client: f.client, Templates: tInf, NetworkPolicies: npInf, Namespaces: nsInf, Events: f.events, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range templates {
		if err := tInf.Informer().GetIndexer().Add(tm); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range policies {
		if err := npInf.Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	f.ctrl = ctrl
	return f
}

// writes returns the verb/resource of every write made through both clients.
func (f *fixture) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range append(f.kube.Actions(), f.client.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func template(name string, mutate ...func(*extensionsv1beta1.SandboxTemplate)) *extensionsv1beta1.SandboxTemplate {
	t := &extensionsv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("uid-" + name),
			Finalizers: []string{Finalizer},
		},
		Spec: extensionsv1beta1.SandboxTemplateSpec{NetworkPolicyManagement: extensionsv1beta1.NetworkPolicyManagementManaged},
	}
	for _, m := range mutate {
		m(t)
	}
	return t
}

func controlledBy(name string, uid types.UID, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// secureDefault is the policy the seeds describe for a managed template without rules, written out
// by hand rather than derived from the code under test.
func secureDefault(tmpl string) networkingv1.NetworkPolicySpec {
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"agents.x-k8s.io/sandbox-template-ref-hash": objectmeta.NameHash(tmpl)}},
		PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sandbox-router"}}}},
		}},
		Egress: []networkingv1.NetworkPolicyEgressRule{{
			To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"}}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: []string{"fc00::/7", "fe80::/10"}}},
			},
		}},
	}
}

func policy(tmpl string, owner *metav1.OwnerReference, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: tmpl + "-network-policy", Namespace: ns, UID: types.UID("np-" + tmpl),
			Labels: map[string]string{"agents.x-k8s.io/sandbox-template-ref-hash": objectmeta.NameHash(tmpl)},
		},
		Spec: spec,
	}
	if owner != nil {
		np.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return np
}

func TestSyncCreatesPolicy(t *testing.T) {
	port := intstr.FromInt32(8080)
	userIngress := []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ingress"}}}},
		Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
	}}
	userEgress := []networkingv1.NetworkPolicyEgressRule{{
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))}},
	}}
	tcp := corev1.ProtocolTCP

	cases := []struct {
		name string
		tmpl *extensionsv1beta1.SandboxTemplate
		want networkingv1.NetworkPolicySpec
	}{
		{
			name: "managed without rules gets the secure default",
			tmpl: template("default"),
			want: secureDefault("default"),
		},
		{
			name: "empty management is managed",
			tmpl: template("empty", func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.NetworkPolicyManagement = "" }),
			want: secureDefault("empty"),
		},
		{
			name: "user rules wrapped with the selector and both policy types",
			tmpl: template("custom", func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicy = &extensionsv1beta1.NetworkPolicySpec{Ingress: userIngress, Egress: userEgress}
			}),
			want: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"agents.x-k8s.io/sandbox-template-ref-hash": objectmeta.NameHash("custom")}},
				PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ingress"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				}},
				Egress: userEgress,
			},
		},
		{
			name: "empty user rules deny both ways",
			tmpl: template("deny", func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicy = &extensionsv1beta1.NetworkPolicySpec{}
			}),
			want: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"agents.x-k8s.io/sandbox-template-ref-hash": objectmeta.NameHash("deny")}},
				PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []*extensionsv1beta1.SandboxTemplate{tc.tmpl}, nil)
			if err := f.ctrl.sync(context.Background(), ns+"/"+tc.tmpl.Name); err != nil {
				t.Fatal(err)
			}
			w := f.writes()
			if len(w) != 1 || w[0].GetVerb() != "create" {
				t.Fatalf("want one create, got %v", w)
			}
			np := w[0].(clienttesting.CreateAction).GetObject().(*networkingv1.NetworkPolicy)
			if np.Name != tc.tmpl.Name+"-network-policy" || np.Namespace != ns {
				t.Errorf("name %s/%s", np.Namespace, np.Name)
			}
			if got := np.Labels["agents.x-k8s.io/sandbox-template-ref-hash"]; got != objectmeta.NameHash(tc.tmpl.Name) {
				t.Errorf("label = %q", got)
			}
			wantOwner := controlledBy(tc.tmpl.Name, tc.tmpl.UID, "SandboxTemplate")
			if len(np.OwnerReferences) != 1 || !apiequality.Semantic.DeepEqual(np.OwnerReferences[0], wantOwner) {
				t.Errorf("owner references = %+v", np.OwnerReferences)
			}
			if !apiequality.Semantic.DeepEqual(np.Spec, tc.want) {
				t.Errorf("spec:\n got %+v\nwant %+v", np.Spec, tc.want)
			}
			if ev := f.drainEvents(); len(ev) != 1 || !strings.Contains(ev[0], "NetworkPolicyCreated") {
				t.Errorf("events = %v", ev)
			}
		})
	}
}

// TestSyncTerminatingNamespace: in a namespace being deleted, where the cluster refuses new
// objects, no policy is made and nothing is written.
func TestSyncTerminatingNamespace(t *testing.T) {
	f := newFixture(t, []*extensionsv1beta1.SandboxTemplate{template("default")}, nil)
	if err := f.namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}); err != nil {
		t.Fatal(err)
	}
	if err := f.ctrl.sync(context.Background(), ns+"/default"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %v, want none", w)
	}
}

func TestSyncExistingPolicy(t *testing.T) {
	tmpl := template("web")
	ours := controlledBy("web", tmpl.UID, "SandboxTemplate")
	other := controlledBy("someone", "uid-other", "SandboxTemplate")
	outdated := secureDefault("web")
	outdated.PodSelector.MatchLabels = map[string]string{"old-label": "x"}
	outdated.Ingress = nil
	unlabelled := policy("web", &ours, secureDefault("web"))
	unlabelled.Labels = map[string]string{"keep": "me"}

	cases := []struct {
		name       string
		tmpl       *extensionsv1beta1.SandboxTemplate
		existing   *networkingv1.NetworkPolicy
		wantVerb   string // "" for no write
		wantErr    bool
		wantEvent  string
		wantLabels map[string]string
	}{
		{name: "equal: no write", tmpl: tmpl, existing: policy("web", &ours, secureDefault("web"))},
		{name: "drifted spec repaired", tmpl: tmpl, existing: policy("web", &ours, outdated), wantVerb: "update", wantEvent: "NetworkPolicyUpdated"},
		{
			name: "lost selector label repaired, other labels kept", tmpl: tmpl, existing: unlabelled, wantVerb: "update", wantEvent: "NetworkPolicyUpdated",
			wantLabels: map[string]string{"keep": "me", "agents.x-k8s.io/sandbox-template-ref-hash": objectmeta.NameHash("web")},
		},
		{name: "uncontrolled: not adopted or repaired, refused", tmpl: tmpl, existing: policy("web", nil, outdated), wantErr: true, wantEvent: "OwnershipConflict"},
		{name: "controlled by another object refused", tmpl: tmpl, existing: policy("web", &other, outdated), wantErr: true, wantEvent: "OwnershipConflict"},
		{
			name: "unmanaged deletes ours",
			tmpl: template("web", func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicyManagement = extensionsv1beta1.NetworkPolicyManagementUnmanaged
				t.Spec.NetworkPolicy = &extensionsv1beta1.NetworkPolicySpec{}
			}),
			existing: policy("web", &ours, secureDefault("web")), wantVerb: "delete", wantEvent: "NetworkPolicyDeleted",
		},
		{
			name: "unmanaged leaves another's policy alone",
			tmpl: template("web", func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicyManagement = extensionsv1beta1.NetworkPolicyManagementUnmanaged
			}),
			existing: policy("web", &other, secureDefault("web")),
		},
		{
			name: "unmanaged leaves an uncontrolled policy alone",
			tmpl: template("web", func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicyManagement = extensionsv1beta1.NetworkPolicyManagementUnmanaged
			}),
			existing: policy("web", nil, secureDefault("web")),
		},
		{
			name: "unmanaged without a policy does nothing",
			tmpl: template("web", func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicyManagement = extensionsv1beta1.NetworkPolicyManagementUnmanaged
			}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var policies []*networkingv1.NetworkPolicy
			if tc.existing != nil {
				policies = append(policies, tc.existing)
			}
			f := newFixture(t, []*extensionsv1beta1.SandboxTemplate{tc.tmpl}, policies)
			err := f.ctrl.sync(context.Background(), ns+"/web")
			if tc.wantErr {
				var conflict *objectmeta.OwnershipConflictError
				if !errors.As(err, &conflict) {
					t.Fatalf("want a conflict error, got %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			w := f.writes()
			if tc.wantVerb == "" {
				if len(w) != 0 {
					t.Fatalf("want no writes, got %v", w)
				}
			} else {
				if len(w) != 1 || w[0].GetVerb() != tc.wantVerb || w[0].GetResource().Resource != "networkpolicies" {
					t.Fatalf("want one %s of the policy, got %v", tc.wantVerb, w)
				}
			}
			if tc.wantVerb == "update" {
				np := w[0].(clienttesting.UpdateAction).GetObject().(*networkingv1.NetworkPolicy)
				if !apiequality.Semantic.DeepEqual(np.Spec, secureDefault("web")) {
					t.Errorf("spec not repaired: %+v", np.Spec)
				}
				if c := metav1.GetControllerOf(np); c == nil || c.UID != tmpl.UID {
					t.Errorf("controller = %+v", c)
				}
				if tc.wantLabels != nil && !apiequality.Semantic.DeepEqual(np.Labels, tc.wantLabels) {
					t.Errorf("labels = %v", np.Labels)
				}
			}
			if tc.wantVerb == "delete" {
				d := w[0].(clienttesting.DeleteAction)
				if d.GetName() != "web-network-policy" || d.GetDeleteOptions().Preconditions == nil || *d.GetDeleteOptions().Preconditions.UID != tc.existing.UID {
					t.Errorf("delete %s with %+v", d.GetName(), d.GetDeleteOptions())
				}
			}
			ev := f.drainEvents()
			if tc.wantEvent == "" && len(ev) != 0 || tc.wantEvent != "" && (len(ev) != 1 || !strings.Contains(ev[0], tc.wantEvent)) {
				t.Errorf("events = %v, want %q", ev, tc.wantEvent)
			}
		})
	}
}

// A policy of ours the cache has not seen yet (or one without our label, which the cache never
// holds) is found through the API after the create is refused.
func TestSyncPolicyOutsideCache(t *testing.T) {
	tmpl := template("web")
	ours := controlledBy("web", tmpl.UID, "SandboxTemplate")
	other := controlledBy("x", "uid-x", "Deployment")
	for _, tc := range []struct {
		name      string
		owner     *metav1.OwnerReference
		wantVerbs []string
		wantErr   bool
	}{
		{name: "ours and equal", owner: &ours, wantVerbs: []string{"create"}},
		{name: "uncontrolled, left as it is", owner: nil, wantVerbs: []string{"create"}, wantErr: true},
		{name: "another's, refused", owner: &other, wantVerbs: []string{"create"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []*extensionsv1beta1.SandboxTemplate{tmpl}, nil)
			if _, err := f.kube.NetworkingV1().NetworkPolicies(ns).Create(context.Background(),
				policy("web", tc.owner, secureDefault("web")), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.kube.ClearActions()
			err := f.ctrl.sync(context.Background(), ns+"/web")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			var verbs []string
			for _, a := range f.writes() {
				verbs = append(verbs, a.GetVerb())
			}
			if strings.Join(verbs, ",") != strings.Join(tc.wantVerbs, ",") {
				t.Errorf("writes = %v, want %v", verbs, tc.wantVerbs)
			}
		})
	}
}

func TestSyncFinalizer(t *testing.T) {
	now := metav1.Now()
	deleting := func(t *extensionsv1beta1.SandboxTemplate) { t.DeletionTimestamp = &now }
	tmpl := template("web")
	ours := controlledBy("web", tmpl.UID, "SandboxTemplate")
	other := controlledBy("someone", "uid-other", "SandboxTemplate")

	cases := []struct {
		name      string
		tmpl      *extensionsv1beta1.SandboxTemplate
		existing  *networkingv1.NetworkPolicy
		wantWrite []string // verb/resource in order
	}{
		{
			name: "deleted template: policy deleted, then finalizer removed", tmpl: template("web", deleting),
			existing: policy("web", &ours, secureDefault("web")), wantWrite: []string{"delete/networkpolicies", "update/sandboxtemplates"},
		},
		{
			name: "deleted template: another's policy kept, finalizer removed", tmpl: template("web", deleting),
			existing: policy("web", &other, secureDefault("web")), wantWrite: []string{"update/sandboxtemplates"},
		},
		{
			name: "deleted template without a policy: finalizer removed", tmpl: template("web", deleting),
			wantWrite: []string{"update/sandboxtemplates"},
		},
		{
			name: "deleted template without our finalizer: nothing", existing: policy("web", &ours, secureDefault("web")),
			tmpl: template("web", deleting, func(t *extensionsv1beta1.SandboxTemplate) { t.Finalizers = []string{"other/finalizer"} }),
		},
		{
			name: "template without finalizer gets it first", existing: nil,
			tmpl:      template("web", func(t *extensionsv1beta1.SandboxTemplate) { t.Finalizers = nil }),
			wantWrite: []string{"update/sandboxtemplates"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var policies []*networkingv1.NetworkPolicy
			if tc.existing != nil {
				policies = append(policies, tc.existing)
			}
			f := newFixture(t, []*extensionsv1beta1.SandboxTemplate{tc.tmpl}, policies)
			if err := f.ctrl.sync(context.Background(), ns+"/web"); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range f.writes() {
				got = append(got, a.GetVerb()+"/"+a.GetResource().Resource)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantWrite, ",") {
				t.Fatalf("writes = %v, want %v", got, tc.wantWrite)
			}
			stored, err := f.client.ExtensionsV1beta1().SandboxTemplates(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hasFinalizer := false
			for _, fin := range stored.Finalizers {
				hasFinalizer = hasFinalizer || fin == Finalizer
			}
			wantFinalizer := tc.tmpl.DeletionTimestamp == nil
			if hasFinalizer != wantFinalizer {
				t.Errorf("finalizers = %v", stored.Finalizers)
			}
		})
	}
}

func TestSyncTemplateGone(t *testing.T) {
	f := newFixture(t, nil, nil)
	if err := f.ctrl.sync(context.Background(), ns+"/missing"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %v", w)
	}
}

func TestTemplateOf(t *testing.T) {
	ours := controlledBy("web", "u", "SandboxTemplate")
	pool := controlledBy("web", "u", "SandboxWarmPool")
	otherGroup := controlledBy("web", "u", "SandboxTemplate")
	otherGroup.APIVersion = "example.com/v1"
	for _, tc := range []struct {
		name   string
		np     *networkingv1.NetworkPolicy
		want   string
		wantOK bool
	}{
		{"controlled by a template", policy("x", &ours, networkingv1.NetworkPolicySpec{}), "web", true},
		{"controlled by another kind", policy("x", &pool, networkingv1.NetworkPolicySpec{}), "", false},
		{"controlled by another group", policy("x", &otherGroup, networkingv1.NetworkPolicySpec{}), "web", false},
		{"uncontrolled, by name", policy("web", nil, networkingv1.NetworkPolicySpec{}), "web", true},
		{"uncontrolled, foreign name", &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "allow-all"}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := templateOf(tc.np)
			if ok != tc.wantOK || ok && got != tc.want {
				t.Errorf("templateOf = %q, %v", got, ok)
			}
		})
	}
}

// TestSecureDefaultAdmitsTheServer: with the server's own pods known, the secure default admits
// them (in their namespace only) beside the router, so that sandboxes/proxy reaches the sandboxes;
// a template with its own rules gets no such peer.
func TestSecureDefaultAdmitsTheServer(t *testing.T) {
	server := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "sandbox-system"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "sandbox-apiserver"}},
	}
	withServer := secureDefault("default")
	withServer.Ingress[0].From = append(withServer.Ingress[0].From, server)
	custom := template("custom", func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.NetworkPolicy = &extensionsv1beta1.NetworkPolicySpec{}
	})
	for _, tc := range []struct {
		tmpl *extensionsv1beta1.SandboxTemplate
		want networkingv1.NetworkPolicySpec
	}{
		{template("default"), withServer},
		{custom, networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"agents.x-k8s.io/sandbox-template-ref-hash": objectmeta.NameHash("custom")}},
			PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"},
		}},
	} {
		f := newFixture(t, []*extensionsv1beta1.SandboxTemplate{tc.tmpl}, nil)
		f.ctrl.serverPeer = &server
		if err := f.ctrl.sync(context.Background(), ns+"/"+tc.tmpl.Name); err != nil {
			t.Fatal(err)
		}
		w := f.writes()
		if len(w) != 1 || w[0].GetVerb() != "create" {
			t.Fatalf("want one create, got %v", w)
		}
		np := w[0].(clienttesting.CreateAction).GetObject().(*networkingv1.NetworkPolicy)
		if !apiequality.Semantic.DeepEqual(np.Spec, tc.want) {
			t.Errorf("%s: spec:\n got %+v\nwant %+v", tc.tmpl.Name, np.Spec, tc.want)
		}
	}
}

// TestSecureDefaultClosesClusterRanges: the cluster's own ranges are closed too, each in its
// family's block, once, and those the defaults cover add nothing.
func TestSecureDefaultClosesClusterRanges(t *testing.T) {
	tmpl := &extensionsv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"}}
	np := DesiredPolicy(tmpl, nil, []string{"10.96.0.0/12", "198.18.0.0/15", "100.70.0.0/16", "2001:db8:42::/56", "198.18.1.0/24"})
	to := np.Spec.Egress[0].To
	want4 := []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "198.18.0.0/15"}
	want6 := []string{"fc00::/7", "fe80::/10", "2001:db8:42::/56"}
	if got := to[0].IPBlock.Except; !slices.Equal(got, want4) {
		t.Errorf("IPv4 except %v; want %v", got, want4)
	}
	if got := to[1].IPBlock.Except; !slices.Equal(got, want6) {
		t.Errorf("IPv6 except %v; want %v", got, want6)
	}
}
