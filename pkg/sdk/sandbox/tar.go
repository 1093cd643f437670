// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// tarRecordSize is tar's default record (20 blocks of 512 bytes). A tar stream sent to the
// sandbox is padded to whole records: tar -x reads whole records and stops at the end-of-archive
// blocks, so it finishes without waiting for the end of its standard input, which some kubelets
// (kwok's) never close.
const tarRecordSize = 20 * 512

// recordPadder counts what passes through it and pads the stream to whole tar records.
type recordPadder struct {
	w io.Writer
	n int64
}

func (p *recordPadder) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n += int64(n)
	return n, err
}

func (p *recordPadder) pad() error {
	if rest := p.n % tarRecordSize; rest != 0 {
		_, err := p.Write(make([]byte, tarRecordSize-rest))
		return err
	}
	return nil
}

// tarSizes maps the archive names of the regular files of a tar stream to their sizes, so that
// the copy can be checked afterwards.
type tarSizes map[string]int64

// writeTarTree writes the local file or directory tree src to tw, named name and below. Symbolic
// links are written as links, not followed; other special files are skipped.
func writeTarTree(tw *tar.Writer, src, name string, sizes tarSizes) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		entryName := path.Join(name, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = entryName
		if info.IsDir() {
			hdr.Name += "/"
		}
		// Owners of this machine mean nothing in the sandbox.
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(tw, f)
		if err != nil {
			return err
		}
		if n != info.Size() {
			return fmt.Errorf("%s changed while it was copied", p)
		}
		sizes[entryName] = n
		return nil
	})
}

// ErrUnsafeEntry is the error of an archive entry that would land outside the destination.
var ErrUnsafeEntry = errors.New("archive entry outside the destination")

// ErrSparseEntry is the error of a sparse archive entry: its holes read as zeros the archive does
// not hold, so a few kilobytes from a sandbox could be written out as terabytes.
var ErrSparseEntry = errors.New("sparse archive entry refused")

// ErrCopyTooLarge is the error of a copy out of a sandbox whose files hold more bytes than the
// caller's bound (see MaxBytes).
var ErrCopyTooLarge = errors.New("the copy is larger than its bound")

// sparse says whether hdr is a sparse entry, in the old GNU format or in one of the PAX ones.
func sparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for key := range hdr.PAXRecords {
		if strings.HasPrefix(key, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// copyBudget counts the bytes of the files a copy writes against its bound.
type copyBudget struct {
	left, limit int64
}

// take reserves what the regular file hdr is about to write, or fails naming the bound; a sparse
// entry is refused whatever its size.
func (b *copyBudget) take(hdr *tar.Header) error {
	switch {
	case sparse(hdr):
		return fmt.Errorf("%w: %q", ErrSparseEntry, hdr.Name)
	case hdr.Size > b.left:
		return fmt.Errorf("%w: %q has %d bytes, and the copy may write at most %d in all", ErrCopyTooLarge, hdr.Name, hdr.Size, b.limit)
	}
	b.left -= hdr.Size
	return nil
}

// extractTar extracts the tar stream r into dest, renaming its top entry name to dest (the way
// cp names a copy): name/x lands in dest/x, and a single file name becomes the file dest.
// Everything is created through an os.Root opened on dest (on its parent directory for a
// single file), so no entry name, .., absolute path or symbolic link, in the archive or already
// on disk, can make it write outside dest. Links whose target would lie outside dest are
// skipped, as are devices and FIFOs; an entry outside name is an error wrapping ErrUnsafeEntry.
// The files written hold at most limit bytes in all (ErrCopyTooLarge), and a sparse entry is
// refused (ErrSparseEntry), each before anything of that entry is written. It returns how many
// entries were skipped.
func extractTar(r io.Reader, name, dest string, limit int64) (skipped int, err error) {
	dest = filepath.Clean(dest)
	budget := &copyBudget{left: limit, limit: limit}
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("%s: nothing was copied", name)
	}
	if err != nil {
		return 0, err
	}
	if rel, err := entryPath(hdr.Name, name); err != nil {
		return 0, err
	} else if rel != "" {
		return 0, fmt.Errorf("%w: %q comes before %q", ErrUnsafeEntry, hdr.Name, name)
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		if err := budget.take(hdr); err != nil {
			return 0, err
		}
		root, err := os.OpenRoot(filepath.Dir(dest))
		if err != nil {
			return 0, err
		}
		defer root.Close()
		if err := writeEntry(root, filepath.Base(dest), hdr.FileInfo().Mode().Perm(), tr, hdr.Size); err != nil {
			return 0, err
		}
		if _, err := tr.Next(); !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%w: more entries after the file %q", ErrUnsafeEntry, name)
		}
		return 0, nil
	case tar.TypeDir:
	default:
		return 0, fmt.Errorf("%s is neither a regular file nor a directory", name)
	}
	if err := os.MkdirAll(dest, hdr.FileInfo().Mode().Perm()|0o700); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return skipped, nil
		}
		if err != nil {
			return skipped, err
		}
		rel, err := entryPath(hdr.Name, name)
		if err != nil {
			return skipped, err
		}
		if rel == "" {
			continue
		}
		target := filepath.FromSlash(rel)
		mode := hdr.FileInfo().Mode().Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(target, mode|0o700)
		case tar.TypeReg:
			if err = budget.take(hdr); err != nil {
				return skipped, err
			}
			if err = root.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				err = writeEntry(root, target, mode, tr, hdr.Size)
			}
		case tar.TypeSymlink:
			if !linkInside(rel, hdr.Linkname) {
				skipped++
				continue
			}
			if err = root.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				_ = root.RemoveAll(target)
				err = root.Symlink(hdr.Linkname, target)
			}
		case tar.TypeLink:
			linkRel, linkErr := entryPath(hdr.Linkname, name)
			if linkErr != nil || linkRel == "" {
				skipped++
				continue
			}
			_ = root.RemoveAll(target)
			err = root.Link(filepath.FromSlash(linkRel), target)
		default:
			skipped++
		}
		if err != nil {
			return skipped, err
		}
	}
}

// entryPath is the path of an archive entry below its top entry name ("" for the top itself),
// or an error when the entry is not under name.
func entryPath(entry, name string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(entry, "./"))
	if path.IsAbs(entry) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: %q", ErrUnsafeEntry, entry)
	}
	if clean == name {
		return "", nil
	}
	rel, ok := strings.CutPrefix(clean, name+"/")
	if !ok {
		return "", fmt.Errorf("%w: %q is not under %q", ErrUnsafeEntry, entry, name)
	}
	return rel, nil
}

// linkInside says whether a symbolic link at rel (below the destination) pointing to target
// stays inside the destination.
func linkInside(rel, target string) bool {
	if target == "" || path.IsAbs(target) {
		return false
	}
	// Checked on the words of the path; the os.Root stops a link that only escapes once other
	// links are resolved.
	resolved := path.Join(path.Dir(path.Join("dest", rel)), target)
	return resolved == "dest" || strings.HasPrefix(resolved, "dest/")
}

// writeEntry writes size bytes of r to the regular file target of root.
func writeEntry(root *os.Root, target string, mode fs.FileMode, r io.Reader, size int64) error {
	// A link or directory of that name, from the archive or from before, is replaced, not
	// written through.
	if info, err := root.Lstat(target); err == nil && !info.Mode().IsRegular() {
		if err := root.RemoveAll(target); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, r)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d of %d bytes", target, n, size)
	}
	return err
}
