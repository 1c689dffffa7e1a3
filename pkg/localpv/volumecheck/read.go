package volumecheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// PathReader returns the Reader the provisioner's discovery agrees with:
// a directory's identity in the recorded form (identity.DirectoryAs), or
// for a path that is or links to a block device, the device's
// (identity.Device, read from sysfs below sysDir, default /sys).
func PathReader(sysDir string) Reader {
	return func(path string, recorded identity.ID) (identity.ID, error) {
		dev, isDev, err := ResolveDevice(path)
		switch {
		case err != nil:
			return "", err
		case isDev:
			id, _, err := identity.Device(sysDir, dev)
			return id, err
		}
		return identity.DirectoryAs(path, recorded)
	}
}

// ResolveDevice follows path's symlinks. It returns the block device it
// leads to and true, or false for a directory, or an error for anything
// else.
func ResolveDevice(path string) (string, bool, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false, fmt.Errorf("failed to resolve %s: %w", path, err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", false, fmt.Errorf("failed to stat %s: %w", target, err)
	}
	switch mode := fi.Mode(); {
	case mode.IsDir():
		return target, false, nil
	case mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0:
		return target, true, nil
	}
	return "", false, fmt.Errorf("%s is neither a directory nor a block device", target)
}
