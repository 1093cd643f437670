// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command rootfs writes an OCI archive (a tar of an OCI image layout) of one image whose single
// layer is a directory tree, without a container engine, for `ctr images import`: the local
// plane's real node imports the images it runs this way, as no registry is reachable. Every
// timestamp is --created and the entries are written in path order, so the same tree gives the
// same digest.
//
//	rootfs --rootfs DIR --name localhost/sandbox:local --out FILE.tar \
//	  --created 2026-01-02T03:04:05Z --cmd '["/usr/local/bin/pause"]' [--env K=V ...] [--user U]
//
// It prints the image's digest.
package main

import (
	"archive/tar"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type envList []string

func (e *envList) String() string     { return strings.Join(*e, ",") }
func (e *envList) Set(s string) error { *e = append(*e, s); return nil }

func main() {
	var root, name, out, created, cmd, user, workdir string
	var env envList
	flag.StringVar(&root, "rootfs", "", "directory whose tree is the image's only layer")
	flag.StringVar(&name, "name", "", "image reference ctr import gives the image (io.containerd.image.name)")
	flag.StringVar(&out, "out", "", "OCI archive to write")
	flag.StringVar(&created, "created", "", "RFC 3339 time of every timestamp")
	flag.StringVar(&cmd, "cmd", "", "the image's Cmd as a JSON array")
	flag.StringVar(&user, "user", "", "the image's User (default root)")
	flag.StringVar(&workdir, "workdir", "/", "the image's WorkingDir")
	flag.Var(&env, "env", "KEY=VALUE of the image's environment (repeat)")
	flag.Parse()
	if root == "" || name == "" || out == "" || created == "" || cmd == "" {
		fmt.Fprintln(os.Stderr, "rootfs: --rootfs, --name, --out, --created and --cmd are required")
		os.Exit(2)
	}
	var argv []string
	if err := json.Unmarshal([]byte(cmd), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "rootfs: --cmd must be a non-empty JSON array of strings: %q\n", cmd)
		os.Exit(2)
	}
	at, err := time.Parse(time.RFC3339, created)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rootfs: --created: %v\n", err)
		os.Exit(2)
	}
	cfg := v1.Config{Cmd: argv, Env: env, User: user, WorkingDir: workdir}
	digest, err := build(root, name, out, at.UTC(), cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rootfs: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

func build(root, name, out string, at time.Time, cfg v1.Config) (v1.Hash, error) {
	work, err := os.MkdirTemp(filepath.Dir(out), ".rootfs-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(work)

	layerFile := filepath.Join(work, "layer.tar")
	if err := writeLayer(root, layerFile, at); err != nil {
		return v1.Hash{}, err
	}
	layer, err := tarball.LayerFromFile(layerFile, tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(1))
	if err != nil {
		return v1.Hash{}, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: at}, CreatedBy: "hack/build-node-images.sh"},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	file, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	file = file.DeepCopy()
	file.Created = v1.Time{Time: at}
	file.OS = "linux"
	file.Architecture = runtime.GOARCH
	file.Config = cfg
	if img, err = mutate.ConfigFile(img, file); err != nil {
		return v1.Hash{}, err
	}

	dir := filepath.Join(work, "layout")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	tag := name[strings.LastIndex(name, ":")+1:]
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          name,
		"org.opencontainers.image.ref.name": tag,
	})); err != nil {
		return v1.Hash{}, err
	}
	if err := tarDir(dir, out+".tmp", at); err != nil {
		return v1.Hash{}, err
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// writeLayer writes the tree under root as a tar, entries in path order, owners and modes as on
// disk, every time at, hard links as links to the first path of their inode.
func writeLayer(root, file string, at time.Time) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	var paths []string
	err = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	seen := map[uint64]string{}
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var link string
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.ModTime, h.AccessTime, h.ChangeTime = at, time.Time{}, time.Time{}
		h.Uname, h.Gname = "", ""
		h.Format = tar.FormatPAX
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			h.Uid, h.Gid = int(st.Uid), int(st.Gid)
			if info.Mode().IsRegular() && st.Nlink > 1 {
				if first, ok := seen[st.Ino]; ok {
					h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
				} else {
					seen[st.Ino] = h.Name
				}
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if err := copyFile(tw, p); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// tarDir writes the OCI layout under dir as the archive file.
func tarDir(dir, file string, at time.Time) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Format = filepath.ToSlash(rel), at, tar.FormatPAX
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		return copyFile(tw, p)
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
