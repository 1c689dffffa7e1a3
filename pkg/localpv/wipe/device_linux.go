package wipe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OpenBlockDevice opens the block device at path (a symlink to one is
// followed) for writing, exclusively: the kernel refuses with EBUSY while
// the device is mounted or claimed by md, device-mapper, bcache or another
// exclusive opener, so a device in use is never wiped.
func OpenBlockDevice(path string) (Device, error) {
	// Check before opening: opening a FIFO for writing would block.
	if err := requireBlockDevice(os.Stat(path)); err != nil {
		return nil, fmt.Errorf("refusing to wipe %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_EXCL, 0)
	switch {
	case errors.Is(err, unix.EBUSY):
		return nil, fmt.Errorf("refusing to wipe %s: it is in use (mounted, or held by md, device-mapper or another exclusive user): %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("failed to open %s: %w", path, err)
	}
	// Check again what was opened, in case path changed meanwhile.
	if err := requireBlockDevice(f.Stat()); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("refusing to wipe %s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to read the size of %s: %w", path, err)
	}
	return &blockDevice{f: f, size: size}, nil
}

func requireBlockDevice(fi fs.FileInfo, err error) error {
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0 {
		return fmt.Errorf("not a block device (mode %s)", fi.Mode())
	}
	return nil
}

type blockDevice struct {
	f    *os.File
	size int64
}

var _ Device = &blockDevice{}

func (d *blockDevice) Name() string { return d.f.Name() }
func (d *blockDevice) Size() int64  { return d.size }
func (d *blockDevice) Sync() error  { return d.f.Sync() }
func (d *blockDevice) Close() error { return d.f.Close() }

func (d *blockDevice) WriteAt(b []byte, off int64) (int, error) { return d.f.WriteAt(b, off) }

// Discard issues BLKDISCARD. The kernel answers EOPNOTSUPP for a device
// without discard support.
func (d *blockDevice) Discard(off, n int64) error {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return err
	}
	r := [2]uint64{uint64(off), uint64(n)}
	var errno unix.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, unix.BLKDISCARD, uintptr(unsafe.Pointer(&r[0])))
	}); err != nil {
		return err
	}
	switch errno {
	case 0:
		return nil
	case unix.EOPNOTSUPP:
		return fmt.Errorf("%w (BLKDISCARD: %w)", ErrDiscardUnsupported, errno)
	}
	return fmt.Errorf("BLKDISCARD: %w", errno)
}
