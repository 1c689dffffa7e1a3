//go:build linux

package identity

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Seams for tests.
var (
	sysfsRoot = "/sys"
	devRoot   = "/dev"
	// udevDataDirs are where udev's database may be: a Job's mount of the
	// host's (jobs.UdevMountPath), then the host's own.
	udevDataDirs  = []string{"/host/run/udev/data", "/run/udev/data"}
	mountInfoPath = "/proc/self/mountinfo"
)

// ioctl numbers (_IOR(type, nr, size) = 2<<30 | size<<16 | type<<8 | nr).
const (
	// FS_IOC_GETFSUUID, _IOR(0x15, 0, struct fsuuid2): Linux 6.9.
	ioctlGetFSUUID = 2<<30 | 17<<16 | 0x15<<8
	// EXT4_IOC_GETFSUUID, _IOR('f', 44, struct fsuuid): Linux 6.0.
	ioctlExt4GetFSUUID = 2<<30 | 8<<16 | 'f'<<8 | 44
	// XFS_IOC_FSGEOMETRY_V1, _IOR('X', 100, struct xfs_fsop_geom_v1):
	// 112 bytes, the UUID at offset 64.
	ioctlXFSGeometryV1 = 2<<30 | 112<<16 | 'X'<<8 | 100
	// BTRFS_IOC_FS_INFO, _IOR(0x94, 31, struct btrfs_ioctl_fs_info_args):
	// 1024 bytes, the fsid at offset 16.
	ioctlBtrfsFSInfo = 2<<30 | 1024<<16 | 0x94<<8 | 31
)

// openFileSystem is the file system of an open file.
type openFileSystem struct {
	f       *os.File
	dev     uint64 // st_dev
	mountID int
}

// uuid returns the file system's UUID from the first source that has one:
// the generic ioctl, the file system's own ioctl, its device's superblock,
// udev's database. All give the UUID the kernel reports, in one form.
func (o openFileSystem) uuid() (string, bool) {
	if available(SourceGenericIoctl) {
		if u, ok := genericUUID(o.f); ok {
			return u, true
		}
	}
	if available(SourceFSIoctl) {
		if u, ok := fsIoctlUUID(o.f); ok {
			return u, true
		}
	}
	major, minor, ok := o.device()
	if !ok {
		return "", false
	}
	if available(SourceSuperblock) {
		if u, ok := deviceSuperblockUUID(major, minor); ok {
			return u, true
		}
	}
	if available(SourceUdev) {
		return udevUUID(major, minor)
	}
	return "", false
}

// withoutUUID is the identity of a file on a file system with no UUID: its
// file handle with its device's identity, as strong as the device's, or
// with the device number where the device has no identity (tmpfs, overlay
// and other anonymous devices, a disk that reports none).
func (o openFileSystem) withoutUUID(handleType int32, handle []byte) ID {
	if id, ok := o.onDisk(handleType, handle); ok {
		return id
	}
	return o.local(handleType, handle)
}

// onDisk is the file handle with the identity of the file system's device,
// when the device has one.
func (o openFileSystem) onDisk(handleType int32, handle []byte) (ID, bool) {
	major, minor, ok := o.device()
	if !ok {
		return "", false
	}
	disk, _, err := deviceByNumber(sysfsRoot, major, minor)
	if err != nil || disk == "" {
		return "", false
	}
	id := FileHandleOnDisk(handleType, handle, disk)
	return id, len(id) <= MaxLength
}

// local is the file handle with the file system's device number.
func (o openFileSystem) local(handleType int32, handle []byte) ID {
	return LocalFileHandle(unix.Major(o.dev), unix.Minor(o.dev), handleType, handle)
}

// device returns the block device the file system lives on: st_dev, or,
// for a file system that reports an anonymous device (btrfs), the block
// device its mount names as its source.
func (o openFileSystem) device() (uint32, uint32, bool) {
	if unix.Major(o.dev) != 0 {
		return unix.Major(o.dev), unix.Minor(o.dev), true
	}
	src := mountSource(mountInfoPath, o.mountID)
	if !strings.HasPrefix(src, "/") {
		return 0, 0, false
	}
	var st unix.Stat_t
	if unix.Stat(src, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, 0, false
	}
	return unix.Major(st.Rdev), unix.Minor(st.Rdev), true
}

func genericUUID(f *os.File) (string, bool) {
	var u struct {
		Len  uint8
		UUID [16]byte
	}
	if ioctl(f, ioctlGetFSUUID, unsafe.Pointer(&u)) != nil || int(u.Len) > len(u.UUID) {
		return "", false
	}
	return formatUUID(u.UUID[:u.Len])
}

// fsIoctlUUID asks the file system's own ioctl, chosen by its magic so that
// no file system receives another's request.
func fsIoctlUUID(f *os.File) (string, bool) {
	var sfs unix.Statfs_t
	if unix.Fstatfs(int(f.Fd()), &sfs) != nil {
		return "", false
	}
	switch uint32(sfs.Type) {
	case unix.EXT4_SUPER_MAGIC:
		var b struct {
			Len, Flags uint32
			UUID       [16]byte
		}
		b.Len = 16
		if ioctl(f, ioctlExt4GetFSUUID, unsafe.Pointer(&b)) != nil || b.Len != 16 {
			return "", false
		}
		return formatUUID(b.UUID[:])
	case unix.XFS_SUPER_MAGIC:
		var b [112]byte
		if ioctl(f, ioctlXFSGeometryV1, unsafe.Pointer(&b)) != nil {
			return "", false
		}
		return formatUUID(b[64:80])
	case unix.BTRFS_SUPER_MAGIC:
		var b [1024]byte
		if ioctl(f, ioctlBtrfsFSInfo, unsafe.Pointer(&b)) != nil {
			return "", false
		}
		return formatUUID(b[16:32])
	}
	return "", false
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// deviceSuperblockUUID reads the UUID from the superblock of the device
// major:minor, opened read-only by its node in /dev.
func deviceSuperblockUUID(major, minor uint32) (string, bool) {
	f, err := openDevice(major, minor)
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }()
	return superblockUUID(f)
}

// openDevice opens the node of block device major:minor read-only, making
// sure the node is that device.
func openDevice(major, minor uint32) (*os.File, error) {
	num := fmt.Sprintf("%d:%d", major, minor)
	var paths []string
	if name := ueventDevName(filepath.Join(sysfsRoot, "dev", "block", num, "uevent")); name != "" {
		paths = append(paths, filepath.Join(devRoot, name))
	}
	paths = append(paths, filepath.Join(devRoot, "block", num))
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK &&
			unix.Major(st.Rdev) == major && unix.Minor(st.Rdev) == minor {
			return f, nil
		}
		_ = f.Close()
	}
	return nil, fmt.Errorf("no readable node of block device %s", num)
}

func ueventDevName(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "DEVNAME="); ok && !strings.Contains(v, "..") {
			return v
		}
	}
	return ""
}

// udevUUID returns ID_FS_UUID from udev's database of block device
// major:minor, when it is a 16-byte UUID.
func udevUUID(major, minor uint32) (string, bool) {
	for _, dir := range udevDataDirs {
		if u, ok := udevRecordUUID(filepath.Join(dir, fmt.Sprintf("b%d:%d", major, minor))); ok {
			return u, true
		}
	}
	return "", false
}

func udevRecordUUID(p string) (string, bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "E:ID_FS_UUID="); ok {
			return parseUUID(v)
		}
	}
	return "", false
}

// mountSource returns the source of the mount with the given ID in a
// mountinfo file, or "".
func mountSource(path string, mountID int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	id := strconv.Itoa(mountID)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[0] != id {
			continue
		}
		for i, v := range fields {
			if v == "-" && i+2 < len(fields) {
				return unescapeMountInfo(fields[i+2])
			}
		}
	}
	return ""
}

// unescapeMountInfo undoes mountinfo's octal escapes (\040 for a blank).
func unescapeMountInfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
