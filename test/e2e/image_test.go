// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ociDescriptor, ociIndex, ociManifest and ociConfig are what TestImage reads of an OCI image
// layout (image-spec v1.1).
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociIndex struct {
	MediaType string          `json:"mediaType"`
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	Config ociDescriptor   `json:"config"`
	Layers []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	Created      time.Time `json:"created"`
	OS           string    `json:"os"`
	Architecture string    `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// imageFiles is everything the image's one layer may hold: no shell, no libraries, no passwd.
var imageFiles = []string{"tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/sandbox-apiserver"}

// TestImage builds the sandbox-apiserver image twice with `hack/build-image.sh` (as `make image`
// does) and checks that both builds have the same digest, that the layout holds one index over
// linux/amd64 and linux/arm64 images running the static binary as 65532 with no shell and the
// OCI labels of this commit, and that the linux/amd64 binary taken out of the image reports that
// version and serves as the chart runs it (serveRendered). Parallel, with the builds at the lowest
// CPU priority: they compile for minutes on an empty build cache, and so take only the CPU that
// the other tests, mostly waiting on the plane, leave idle.
func TestImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var digests []string
	for _, build := range []string{"first", "second"} {
		out := filepath.Join(dir, build)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		cmd := exec.CommandContext(ctx, "nice", "-n", "19", filepath.Join(repoRoot, "hack/build-image.sh"))
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "OUT_DIR="+out)
		start := time.Now()
		log, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("hack/build-image.sh (%s build): %v\n%s", build, err, indent(string(log)))
		}
		t.Logf("%s build in %s", build, time.Since(start).Round(time.Second))
		digests = append(digests, strings.TrimSpace(string(readFile(t, filepath.Join(out, "sandbox-apiserver.digest")))))
	}
	if digests[0] != digests[1] || !strings.HasPrefix(digests[0], "sha256:") {
		t.Fatalf("two builds of one commit gave the digests %q and %q, want one", digests[0], digests[1])
	}
	t.Logf("image index %s", digests[0])

	layout := filepath.Join(dir, "first", "sandbox-apiserver")
	blob := func(digest string) []byte {
		return readFile(t, filepath.Join(layout, "blobs", strings.Replace(digest, ":", "/", 1)))
	}
	var top ociIndex
	mustUnmarshal(t, readFile(t, filepath.Join(layout, "index.json")), &top)
	if len(top.Manifests) != 1 || top.Manifests[0].Digest != digests[0] || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("index.json names %+v, want the one image index %s", top.Manifests, digests[0])
	}
	version := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]

	revision := strings.TrimSpace(gitOutput(t, "rev-parse", "HEAD"))
	commitTime, err := time.Parse(time.RFC3339, strings.TrimSpace(gitOutput(t, "log", "-1", "--format=%cI")))
	if err != nil {
		t.Fatal(err)
	}

	var index ociIndex
	mustUnmarshal(t, blob(digests[0]), &index)
	var platforms []string
	var amd64Binary []byte
	for _, m := range index.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s has no platform", m.Digest)
		}
		platform := m.Platform.OS + "/" + m.Platform.Architecture
		platforms = append(platforms, platform)
		var manifest ociManifest
		mustUnmarshal(t, blob(m.Digest), &manifest)
		var cfg ociConfig
		mustUnmarshal(t, blob(manifest.Config.Digest), &cfg)
		if cfg.OS+"/"+cfg.Architecture != platform {
			t.Errorf("%s: config says %s/%s", platform, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", platform, cfg.Config.User)
		}
		if !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/local/bin/sandbox-apiserver"}) {
			t.Errorf("%s: entrypoint %q", platform, cfg.Config.Entrypoint)
		}
		if !cfg.Created.Equal(commitTime) {
			t.Errorf("%s: created %s, want the commit's time %s", platform, cfg.Created, commitTime)
		}
		wantLabels := map[string]string{
			"org.opencontainers.image.version":  version,
			"org.opencontainers.image.revision": revision,
			"org.opencontainers.image.source":   "https://github.com/sandbox-apiserver/sandbox-apiserver",
			"org.opencontainers.image.created":  commitTime.UTC().Format(time.RFC3339),
		}
		for k, want := range wantLabels {
			if got := cfg.Config.Labels[k]; got != want || want == "" {
				t.Errorf("%s: label %s = %q, want %q", platform, k, got, want)
			}
		}
		if len(manifest.Layers) != 1 {
			t.Fatalf("%s: %d layers, want 1", platform, len(manifest.Layers))
		}
		files, binary := layerFiles(t, blob(manifest.Layers[0].Digest), "usr/local/bin/sandbox-apiserver")
		if !slices.Equal(files, imageFiles) {
			t.Errorf("%s: the layer holds %q, want only %q", platform, files, imageFiles)
		}
		if platform == "linux/amd64" {
			amd64Binary = binary
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("platforms %q, want linux/amd64 and linux/arm64", platforms)
	}

	bin := filepath.Join(dir, "sandbox-apiserver")
	if err := os.WriteFile(bin, amd64Binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	for _, want := range []string{"sandbox-apiserver " + version + " ", "commit " + revision, "linux/amd64"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--version of the image's binary says %q, want %q in it", strings.TrimSpace(string(out)), want)
		}
	}
	serveRendered(t, bin)
}

// layerFiles lists a gzipped layer's entries in order, and returns the content of the file want.
func layerFiles(t *testing.T, layer []byte, want string) (names []string, content []byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, content
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("layer entry %s owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
		}
		if h.Name == want {
			if content, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %T: %v", v, err)
	}
}

func gitOutput(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
