// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Volumes is the directory of the plane's PersistentVolumes (local-path-provisioner's shared
// path, artifacts/local/local-path.yaml).
func (c Config) Volumes() string { return filepath.Join(c.Out, "volumes") }

// EnsureOwnDir makes dir with mode 0700 for the user running the plane, or accepts it when it is
// already a directory (not a link) of that user, and sets its mode to 0700. Anything else is
// refused: a directory made by someone else first could let them read every volume.
func EnsureOwnDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err == nil {
		return os.Chmod(dir, 0o700) // the umask may have taken bits away, never added any
	} else if !errors.Is(err, fs.ErrExist) {
		return err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: refusing to keep volumes there (remove it)", dir)
	case !info.IsDir():
		return fmt.Errorf("%s is not a directory: refusing to keep volumes there (remove it)", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to uid %d, not to uid %d running the plane: refusing to keep volumes there (remove it)",
			dir, st.Uid, os.Getuid())
	}
	return os.Chmod(dir, 0o700)
}
