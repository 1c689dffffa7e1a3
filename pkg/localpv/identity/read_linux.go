//go:build linux

package identity

import (
	"bytes"
	"fmt"
	"os"
	"unsafe"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// fsUUID is struct fsuuid2 of linux/fs.h.
type fsUUID struct {
	Len  uint8
	UUID [16]byte
}

// ioctlGetFSUUID is FS_IOC_GETFSUUID, _IOR(0x15, 0, struct fsuuid2) (Linux 6.5).
const ioctlGetFSUUID = 2<<30 | 17<<16 | 0x15<<8

// Directory returns the identity of a directory: its file system's UUID
// (FS_IOC_GETFSUUID, which needs no access to the device) and its file
// handle (inode and generation), or the file handle alone where the file
// system reports no UUID. It needs no privilege.
func Directory(path string) (ID, error) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return "", fmt.Errorf("failed to read the file handle of %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	if u, ok := fileSystemUUID(f); ok {
		return FS(u, h.Type(), h.Bytes()), nil
	}
	return FileHandle(h.Type(), h.Bytes()), nil
}

func fileSystemUUID(f *os.File) (string, bool) {
	var u fsUUID
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), ioctlGetFSUUID, uintptr(unsafe.Pointer(&u)))
	if errno != 0 || u.Len == 0 || int(u.Len) > len(u.UUID) || bytes.Count(u.UUID[:u.Len], []byte{0}) == int(u.Len) {
		return "", false
	}
	if u.Len == 16 {
		return uuid.UUID(u.UUID).String(), true
	}
	return fmt.Sprintf("%x", u.UUID[:u.Len]), true
}
