//go:build linux

package volumecheck

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
)

// mountInfoPath is where the kernel lists this process's mounts.
const mountInfoPath = "/proc/self/mountinfo"

// mountedFrom checks that the file system at mountPath lives on device:
// its st_dev is the device's number or, for file systems with an anonymous
// device number (btrfs), the mount's source is the device.
func mountedFrom(mountPath, device string) error {
	var dst, dev unix.Stat_t
	if err := unix.Stat(device, &dev); err != nil {
		return fmt.Errorf("failed to stat %s: %w", device, err)
	}
	if err := unix.Stat(mountPath, &dst); err != nil {
		return fmt.Errorf("failed to stat %s: %w", mountPath, err)
	}
	if dst.Dev == dev.Rdev {
		return nil
	}
	if unix.Major(dst.Dev) == 0 {
		if src, ok := mountSource(mountPath); ok {
			var s unix.Stat_t
			if err := unix.Stat(src, &s); err == nil && s.Mode&unix.S_IFMT == unix.S_IFBLK && s.Rdev == dev.Rdev {
				return nil
			}
		}
	}
	return fmt.Errorf("%s is on device %d:%d, %s is %d:%d", mountPath, unix.Major(dst.Dev), unix.Minor(dst.Dev),
		device, unix.Major(dev.Rdev), unix.Minor(dev.Rdev))
}

// mountSource returns the source of the topmost mount at mountPath.
func mountSource(mountPath string) (string, bool) {
	infos, err := mount.ParseMountInfo(mountInfoPath)
	if err != nil {
		return "", false
	}
	clean := filepath.Clean(mountPath)
	src, ok := "", false
	for _, mi := range infos {
		if mi.MountPoint == clean {
			src, ok = mi.Source, true
		}
	}
	return src, ok
}
