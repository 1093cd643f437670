// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command image assembles an OCI image layout of one static binary, without a container engine:
// one image per platform, each a single layer holding the binary on an empty base, and an image
// index over them. Every timestamp is --created and the layer's entries are written in a fixed
// order, so the same binaries give the same digests.
//
//	image --name sandbox-apiserver --out DIR --created 2026-01-02T03:04:05Z \
//	  --version v0.1.0 --revision SHA --source URL \
//	  --binary linux/amd64=PATH --binary linux/arm64=PATH
//
// It prints the index's digest.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// binDir is where the binary lives in the image.
const binDir = "usr/local/bin"

// nonRoot is the UID and GID the image runs as: the "nonroot" of distroless images, so the same
// runAsUser works for either.
const nonRoot = "65532"

type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(s string) error {
	platform, file, ok := strings.Cut(s, "=")
	if !ok || file == "" {
		return fmt.Errorf("%q is not OS/ARCH=PATH", s)
	}
	if _, err := v1.ParsePlatform(platform); err != nil {
		return err
	}
	b[platform] = file
	return nil
}

func main() {
	bins := binaries{}
	var name, out, created, version, revision, source string
	flag.StringVar(&name, "name", "", "binary name, also its path /usr/local/bin/NAME and the entrypoint")
	flag.StringVar(&out, "out", "", "directory of the OCI image layout to write (must not exist)")
	flag.StringVar(&created, "created", "", "RFC 3339 time of every timestamp (the commit's time)")
	flag.StringVar(&version, "version", "", "org.opencontainers.image.version")
	flag.StringVar(&revision, "revision", "", "org.opencontainers.image.revision")
	flag.StringVar(&source, "source", "", "org.opencontainers.image.source")
	flag.Var(bins, "binary", "OS/ARCH=PATH of the binary for one platform (repeat per platform)")
	flag.Parse()
	if name == "" || out == "" || created == "" || version == "" || len(bins) == 0 {
		fmt.Fprintln(os.Stderr, "image: --name, --out, --created, --version and at least one --binary are required")
		os.Exit(2)
	}
	digest, err := build(name, out, created, version, revision, source, bins)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

func build(name, out, created, version, revision, source string, bins binaries) (v1.Hash, error) {
	at, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("--created: %w", err)
	}
	at = at.UTC()
	labels := map[string]string{
		"org.opencontainers.image.title":    name,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.created":  at.Format(time.RFC3339),
	}

	platforms := make([]string, 0, len(bins))
	for p := range bins {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)

	var index v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		platform, _ := v1.ParsePlatform(p)
		img, err := image(name, bins[p], *platform, at, labels)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", p, err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}
	index = mutate.Annotations(index, labels).(v1.ImageIndex)

	if _, err := os.Stat(out); err == nil {
		return v1.Hash{}, fmt.Errorf("%s exists: remove it first", out)
	}
	lp, err := layout.Write(out, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	// The layout's own index names the image index by its version, for skopeo's oci:DIR:TAG.
	if err := lp.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	})); err != nil {
		return v1.Hash{}, err
	}
	return index.Digest()
}

// image is one platform's image: the binary as the only layer, run as nonRoot.
func image(name, binary string, platform v1.Platform, at time.Time, labels map[string]string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := layerTar(name, data, at)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: at},
			CreatedBy: "hack/build-image.sh: " + path.Join("/", binDir, name),
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: at}
	cfg.OS = platform.OS
	cfg.Architecture = platform.Architecture
	cfg.Variant = platform.Variant
	cfg.Config = v1.Config{
		Entrypoint: []string{path.Join("/", binDir, name)},
		User:       nonRoot + ":" + nonRoot,
		WorkingDir: "/",
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: at})
}

// layerTar is the layer: the directories down to the binary, and /tmp (sticky, writable by all,
// for an image run without an emptyDir there). Entries in path order, owned by root, every time
// the same.
func layerTar(name string, binary []byte, at time.Time) ([]byte, error) {
	type entry struct {
		name string
		mode int64
		data []byte
		dir  bool
	}
	entries := []entry{{name: "tmp/", mode: 0o1777, dir: true}}
	var dir string
	for _, part := range strings.Split(binDir, "/") {
		dir = path.Join(dir, part)
		entries = append(entries, entry{name: dir + "/", mode: 0o755, dir: true})
	}
	entries = append(entries, entry{name: path.Join(binDir, name), mode: 0o755, data: binary})
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: at, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
