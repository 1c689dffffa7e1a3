package driver

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
)

// isMountPoint reports whether a mount sits at path in this process's mount
// namespace. A bind mount from the same file system has the same device as
// its parent, so the mount table is read rather than the device compared.
func isMountPoint(path string) (bool, error) {
	infos, err := mount.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("reading the mount table: %w", err)
	}
	for _, mi := range infos {
		if mi.MountPoint == path {
			return true, nil
		}
	}
	return false, nil
}

// bindMount mounts src at target, read-only when ro.
func bindMount(src, target string, ro bool) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s at %s: %w", src, target, err)
	}
	if !ro {
		return nil
	}
	// A bind mount takes MS_RDONLY only when remounted.
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		_ = unix.Unmount(target, 0)
		return fmt.Errorf("making %s read-only: %w", target, err)
	}
	return nil
}

// unmountAll unmounts every mount stacked at target; none is no error.
func unmountAll(target string) error {
	for range 16 {
		mounted, err := isMountPoint(target)
		if err != nil || !mounted {
			return err
		}
		if err := unix.Unmount(target, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmounting %s: %w", target, err)
		}
	}
	return fmt.Errorf("%s is still mounted after 16 unmounts", target)
}
