package wipe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
)

// ErrOtherFileSystem marks an entry that lies on another file system than
// the directory being cleaned (a mount below it): it is never descended
// into nor removed.
var ErrOtherFileSystem = errors.New("another file system is mounted there")

// CleanDirectory removes every entry below dir and keeps dir itself. It is
// the provisioner's one directory cleaner: the cleanup Job empties
// Filesystem volumes with it (through CleanDirectoryFile), fsclean.sh is it,
// and the default class's CSI driver deletes its volumes with it.
//
// It refuses, before it removes anything: a path that is not clean and
// absolute, the root directory, a path that is not a directory (a symlink to
// one included), and a directory with a file system mounted anywhere below
// it, as mountInfo lists mounts; removing that file system's files would
// wipe more than the volume. While it removes it never follows a symlink (a
// symlink planted by the previous tenant is removed, not its target) and
// never crosses onto another file system: a directory on another device, or
// one the kernel reports as a mount point (a bind mount of the same file
// system), is neither entered nor removed and fails the clean with
// ErrOtherFileSystem. Every other entry is still removed.
func CleanDirectory(ctx context.Context, dir, mountInfo string) error {
	if err := checkCleanPath(dir); err != nil {
		return err
	}
	f, err := OpenDirectory(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return CleanDirectoryFile(ctx, f, mountInfo)
}

// OpenDirectory opens the directory dir for CleanDirectoryFile without
// following a symlink at its last element.
func OpenDirectory(dir string) (*os.File, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to stat %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("refusing to clean %s: not a directory (mode %s)", dir, fi.Mode())
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", dir, err)
	}
	return f, nil
}

// CleanDirectoryFile is CleanDirectory on the open directory f, whose name
// is its path: the walk starts at f, so what a caller checked on f (its
// identity, say) is what is emptied, even if the path leads elsewhere by
// now. Mounts below the path refuse the clean as in CleanDirectory.
func CleanDirectoryFile(ctx context.Context, f *os.File, mountInfo string) error {
	dir := f.Name()
	if err := checkCleanPath(dir); err != nil {
		return err
	}
	if below, err := mountedBelow(dir, mountInfo); err != nil || len(below) > 0 {
		if err != nil {
			return err
		}
		return fmt.Errorf("refusing to clean %s: %s is mounted below it; unmount it first", dir, below[0])
	}
	entries, failed, err := removeContentsOf(f, dir)
	if err != nil {
		return fmt.Errorf("failed to remove %d of %d entries of %s: %w", failed, entries, dir, err)
	}
	klog.FromContext(ctx).Info("Removed directory contents", "directory", dir, "entries", entries)
	return nil
}

func checkCleanPath(dir string) error {
	switch {
	case dir == "":
		return errors.New("refusing to clean an empty path")
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		return fmt.Errorf("refusing to clean %q: not a clean absolute path", dir)
	case dir == "/":
		return errors.New("refusing to clean the root directory")
	}
	return nil
}

// mountedBelow returns the mount points strictly below dir, sorted.
func mountedBelow(dir, mountInfo string) ([]string, error) {
	mps, err := discovery.MountPoints(mountInfo)
	if err != nil {
		return nil, err
	}
	var out []string
	for mp := range mps {
		if mp != dir && config.Within(mp, dir) {
			out = append(out, mp)
		}
	}
	slices.Sort(out)
	return out, nil
}
