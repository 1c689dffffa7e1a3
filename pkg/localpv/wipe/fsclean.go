package wipe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
)

// cleanDirectory removes every entry of dir and keeps dir. It refuses a
// path that is not a clean absolute directory (a symlink included), the
// root directory, and a directory with another filesystem mounted below it:
// removing that filesystem's files would wipe more than the volume.
func cleanDirectory(ctx context.Context, dir, mountInfo string) error {
	switch {
	case dir == "":
		return fmt.Errorf("%s is not set: it names the directory to empty", FilesystemVariable)
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		return fmt.Errorf("refusing to clean %q: %s must be a clean absolute path", dir, FilesystemVariable)
	case dir == "/":
		return fmt.Errorf("refusing to clean the root directory")
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("failed to stat %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("refusing to clean %s: not a directory (mode %s)", dir, fi.Mode())
	}
	mps, err := discovery.MountPoints(mountInfo)
	if err != nil {
		return err
	}
	for mp := range mps {
		if mp != dir && config.Within(mp, dir) {
			return fmt.Errorf("refusing to clean %s: %s is mounted below it", dir, mp)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("failed to list %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		// os.RemoveAll never follows a symlink: one planted by the
		// previous tenant is removed, not its target.
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failed to remove %d of %d entries of %s: %w", len(errs), len(entries), dir, err)
	}
	klog.FromContext(ctx).Info("Removed directory contents", "directory", dir, "entries", len(entries))
	return nil
}
