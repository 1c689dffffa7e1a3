package wipe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OpenBlockDevice opens the block device at path (a symlink to one is
// followed) for writing, exclusively: the kernel refuses with EBUSY while
// the device is mounted or claimed by md, device-mapper, bcache or another
// exclusive opener, so a device in use is never wiped.
//
// A path /proc/self/fd/N or /dev/fd/N (N from 3) names a descriptor the
// program inherited: the cleanup Job opens the device, checks its identity
// on that descriptor and passes it so. It is written through as it is and
// never reopened by name, so the program wipes the device that was checked
// even if the device's name leads elsewhere by now; it is claimed
// exclusively through the descriptor as any other device is.
func OpenBlockDevice(path string) (Device, error) {
	if fd, ok := InheritedFD(path); ok {
		return adoptBlockDevice(fd, path)
	}
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
	// claim is the exclusive open of an inherited device, kept until
	// Close.
	claim *os.File
}

var _ Device = &blockDevice{}

func (d *blockDevice) Name() string { return d.f.Name() }
func (d *blockDevice) Size() int64  { return d.size }
func (d *blockDevice) Sync() error  { return d.f.Sync() }
func (d *blockDevice) Close() error {
	err := d.f.Close()
	if d.claim != nil {
		err = errors.Join(err, d.claim.Close())
	}
	return err
}

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

// InheritedFD returns N for a path /proc/self/fd/N or /dev/fd/N with N from
// 3: a descriptor the process inherited, not a path to resolve.
func InheritedFD(path string) (int, bool) {
	for _, prefix := range []string{"/proc/self/fd/", "/dev/fd/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			n, err := strconv.Atoi(rest)
			return n, err == nil && n >= 3 && strconv.Itoa(n) == rest
		}
	}
	return 0, false
}

// adoptBlockDevice takes the inherited descriptor fd of a block device open
// for writing. The device must not be held by a stacked device, and it is
// claimed exclusively through the descriptor (not a name) for as long as
// it is wiped, so that a device in use is refused as by path.
func adoptBlockDevice(fd int, path string) (Device, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("refusing to wipe %s: not an open descriptor: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return nil, fmt.Errorf("refusing to wipe %s: not a block device (mode %#o)", path, st.Mode)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to read the flags of %s: %w", path, err)
	}
	if acc := flags & unix.O_ACCMODE; acc != unix.O_WRONLY && acc != unix.O_RDWR {
		return nil, fmt.Errorf("refusing to wipe %s: the descriptor is not open for writing", path)
	}
	if n := holders(st.Rdev); n > 0 {
		return nil, fmt.Errorf("refusing to wipe %s: it is in use (held by %d stacked devices, such as md or device-mapper)", path, n)
	}
	claim, err := os.OpenFile(path, os.O_RDONLY|unix.O_EXCL, 0)
	switch {
	case errors.Is(err, unix.EBUSY):
		return nil, fmt.Errorf("refusing to wipe %s: it is in use (mounted, or held by md, device-mapper or another exclusive user): %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("failed to claim %s: %w", path, err)
	}
	d := &blockDevice{f: os.NewFile(uintptr(fd), path), claim: claim}
	var size uint64
	if err := ioctlSize(fd, &size); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("failed to read the size of %s: %w", path, err)
	}
	d.size = int64(size)
	return d, nil
}

// holders counts the devices stacked on the block device rdev.
func holders(rdev uint64) int {
	dirents, _ := os.ReadDir(fmt.Sprintf("/sys/dev/block/%d:%d/holders", unix.Major(rdev), unix.Minor(rdev)))
	return len(dirents)
}

// ioctlSize reads a block device's size without moving the descriptor's
// offset, which the process that passed it shares.
func ioctlSize(fd int, size *uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKGETSIZE64, uintptr(unsafe.Pointer(size)))
	if errno != 0 {
		return errno
	}
	return nil
}
