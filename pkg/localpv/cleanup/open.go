package cleanup

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openExclusive opens the block device dev for reading and writing,
// exclusively: the kernel refuses while it is mounted or claimed by md,
// device-mapper or another exclusive opener.
func openExclusive(dev string) (*os.File, error) {
	f, err := os.OpenFile(dev, os.O_RDWR|unix.O_EXCL|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, unix.EBUSY):
		return nil, fmt.Errorf("%s is in use (mounted, or held by md, device-mapper or another exclusive user): %w", dev, err)
	case err != nil:
		return nil, fmt.Errorf("failed to open %s: %w", dev, err)
	}
	fi, err := f.Stat()
	if err == nil && (fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0) {
		err = fmt.Errorf("%s is not a block device (mode %s)", dev, fi.Mode())
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// releaseExclusive returns a second, non-exclusive descriptor of the device
// f is open on, opened through f itself (/proc/self/fd), never through a
// name, and closes f. The cleaner command gets it: it pins the device (a
// loop device stays bound to its file, a disk's kernel name is not reused
// while it is open) and lets the command claim the device exclusively.
func releaseExclusive(f *os.File) (*os.File, error) {
	defer func() { _ = f.Close() }()
	g, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to reopen the checked device %s: %w", f.Name(), err)
	}
	var a, b unix.Stat_t
	if err := errors.Join(unix.Fstat(int(f.Fd()), &a), unix.Fstat(int(g.Fd()), &b)); err != nil {
		_ = g.Close()
		return nil, fmt.Errorf("failed to compare the reopened device %s with the checked one: %w", f.Name(), err)
	}
	if a.Rdev != b.Rdev {
		_ = g.Close()
		return nil, fmt.Errorf("the reopened device %s is not the checked one", f.Name())
	}
	return g, nil
}
