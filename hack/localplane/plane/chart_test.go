// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadImage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sandbox-apiserver")
	if err := os.MkdirAll(filepath.Join(dir, "blobs/sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(index string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(index), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json",` +
		`"annotations":{"org.opencontainers.image.ref.name":"v0.1.0-3-gabc"}}]}`)
	img, err := ReadImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := img.Ref(), "localhost/sandbox-apiserver:v0.1.0-3-gabc"; got != want {
		t.Errorf("Ref() = %q, want %q", got, want)
	}

	write(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json"}]}`)
	if _, err := ReadImage(dir); err == nil || !strings.Contains(err.Error(), "one tagged image") {
		t.Errorf("an untagged layout: err = %v, want one naming the missing tag", err)
	}
	if _, err := ReadImage(filepath.Join(t.TempDir(), "etcd")); err == nil || !strings.Contains(err.Error(), "make chart-images") {
		t.Errorf("no layout: err = %v, want one saying how to build it", err)
	}
}

// The install overrides the images and, for one node, the etcd members' spreading; nothing else.
func TestValuesOverrideOnlyImagesAndSpreading(t *testing.T) {
	got := ChartValues(Image{Name: "sandbox-apiserver", Tag: "v1"}, Image{Name: "etcd", Tag: "v3.6.8"})
	want := []string{
		"image.repository=localhost/sandbox-apiserver", "image.tag=v1", "image.pullPolicy=Never",
		"etcd.bundled.image=localhost/etcd:v3.6.8", "etcd.bundled.pullPolicy=Never",
		"etcd.bundled.antiAffinity=soft",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ChartValues() = %q, want %q", got, want)
	}
}

func TestTarDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "blobs/sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"index.json": "{}", "oci-layout": "x", "blobs/sha256/ab": "blob"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := tarDir(&buf, dir); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got[hdr.Name] = string(data)
	}
	want := map[string]string{"blobs/": "", "blobs/sha256/": "", "blobs/sha256/ab": "blob", "index.json": "{}", "oci-layout": "x"}
	if len(got) != len(want) {
		t.Fatalf("archive holds %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("archive entry %q = %q, want %q", k, got[k], v)
		}
	}
}

// The chart mode runs neither sandbox-etcd nor sandbox-apiserver here: the chart's step installs
// them on the real node, and the start then waits for their APIs as in the host mode.
func TestStepsToRunInTheChartMode(t *testing.T) {
	p := &Plane{Config: Config{Root: "/repo", Out: "/repo/_output/local", Mode: ModeChart, SkipSandboxAPIServer: true}}
	steps, err := p.stepsToRun(true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"etcd", "kube-apiserver", "kube-controller-manager", "local-path-provisioner", "kube-scheduler",
		"kwok", "kwok-guard", "containerd", "kubelet", "kube-proxy", "kube-router", "coredns", "kubernetes-service"}
	if got := componentSteps(steps); !slices.Equal(got, want) {
		t.Errorf("components %v, want %v", got, want)
	}
	var names []string
	for _, s := range steps[len(steps)-3:] {
		names = append(names, s.name)
	}
	if want := []string{"helm install the chart", "APIServices Available", "OpenAPI served"}; !slices.Equal(names, want) {
		t.Errorf("the last steps %q, want %q", names, want)
	}
	host := &Plane{Config: Config{Root: "/repo", Out: "/repo/_output/local", Mode: ModeHost}}
	steps, err = host.stepsToRun(true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(steps, func(s step) bool { return s.chart }) {
		t.Error("the host mode runs the chart's step")
	}
	comps := p.Config.Components()
	if slices.ContainsFunc(comps, func(c Component) bool { return c.Name == "sandbox-apiserver" || c.Name == "sandbox-etcd" }) {
		t.Error("the chart mode's table has the server's processes")
	}
	kas, _ := p.Config.Component("kube-apiserver")
	if !slices.Contains(kas.Args, "--enable-aggregator-routing=true") {
		t.Error("in the chart mode kube-apiserver must route to the APIServices' endpoints")
	}
}
