package identity

import (
	"os"
	"strings"
	"sync/atomic"
)

// Source is a way to read a file system's UUID. Tests force sources
// unavailable to run the fallbacks that kernels before 6.9 take.
type Source uint32

// Sources of a file system's UUID, in the order they are tried.
const (
	// SourceGenericIoctl is FS_IOC_GETFSUUID (Linux 6.9 and later).
	SourceGenericIoctl Source = 1 << iota
	// SourceFSIoctl is a file system's own ioctl: EXT4_IOC_GETFSUUID (6.0),
	// XFS_IOC_FSGEOMETRY_V1, BTRFS_IOC_FS_INFO.
	SourceFSIoctl
	// SourceSuperblock is the superblock on the file system's device (ext4,
	// xfs, btrfs), which needs the device to be readable.
	SourceSuperblock
	// SourceUdev is ID_FS_UUID in udev's database of the device.
	SourceUdev
)

// UnavailableEnv names the environment variable that forces sources
// unavailable in a process (e2e tests set it on discovery and cleanup):
// a comma-separated list of generic-ioctl, fs-ioctl, superblock and udev.
const UnavailableEnv = "NODEPLUG_TEST_FSUUID_UNAVAILABLE"

var unavailable atomic.Uint32

func init() { unavailable.Store(uint32(parseSources(os.Getenv(UnavailableEnv)))) }

func parseSources(s string) Source {
	var out Source
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "generic-ioctl":
			out |= SourceGenericIoctl
		case "fs-ioctl":
			out |= SourceFSIoctl
		case "superblock":
			out |= SourceSuperblock
		case "udev":
			out |= SourceUdev
		}
	}
	return out
}

// SetUnavailable forces the given sources unavailable (replacing what was
// forced before) and returns a function that restores the previous setting.
// It is for tests.
func SetUnavailable(s Source) (restore func()) {
	old := unavailable.Swap(uint32(s))
	return func() { unavailable.Store(old) }
}

func available(s Source) bool { return Source(unavailable.Load())&s == 0 }
