package wipe

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// readBatch is how many names are read from a directory at a time, so that
// a huge directory is removed without holding all its names.
const readBatch = 512

// walker removes a tree with *at system calls relative to open directory
// descriptors: no path is resolved twice, no symlink is followed, and no
// directory on another file system or mount is entered.
type walker struct {
	// dev is the device of the directory being cleaned.
	dev uint64
	// mount is the mount ID of the directory being cleaned, -1 when the
	// file system gives none (it has no file handles).
	mount int
	// openat2 is false once the kernel said it lacks openat2 (before 5.6);
	// st_dev and the mount ID then guard against a mount.
	openat2 bool
}

// removeContents removes every entry of dir. It returns the number of
// entries dir held and of those it could not remove, with their errors.
func removeContents(dir string) (entries, failed int, err error) {
	return removeBelow(dir, true)
}

// removeBelow is removeContents, with openat2 tried or not.
func removeBelow(dir string, openat2 bool) (entries, failed int, err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("failed to open %s: %w", dir, err)
	}
	return removeBelowFD(fd, dir, openat2)
}

// removeContentsOf removes every entry of the open directory f, named dir
// in messages. It never resolves dir: what f is, is what is emptied.
func removeContentsOf(f *os.File, dir string) (entries, failed int, err error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("failed to duplicate the descriptor of %s: %w", dir, err)
	}
	return removeBelowFD(fd, dir, true)
}

// removeBelowFD removes every entry of the open directory fd, named dir in
// messages, and closes fd.
func removeBelowFD(fd int, dir string, openat2 bool) (entries, failed int, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return 0, 0, fmt.Errorf("failed to stat %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		_ = unix.Close(fd)
		return 0, 0, fmt.Errorf("refusing to clean %s: not a directory", dir)
	}
	w := &walker{dev: st.Dev, mount: mountID(fd), openat2: openat2}
	var errs []error
	err = w.each(fd, dir, func(name string) {
		entries++
		if err := w.remove(fd, dir, name); err != nil {
			failed++
			errs = append(errs, err)
		}
	})
	return entries, failed, errors.Join(append(errs, err)...)
}

// each calls fn with every name in the open directory fd, in batches, and
// closes fd.
func (w *walker) each(fd int, dir string, fn func(name string)) error {
	f := os.NewFile(uintptr(fd), dir)
	defer func() { _ = f.Close() }()
	for {
		names, err := f.Readdirnames(readBatch)
		for _, n := range names {
			fn(n)
		}
		switch {
		case errors.Is(err, io.EOF) || (err == nil && len(names) == 0):
			return nil
		case err != nil:
			return fmt.Errorf("failed to list %s: %w", dir, err)
		}
	}
}

// remove removes the entry name of the open directory parent (at path
// dir), a directory with everything below it.
func (w *walker) remove(parent int, dir, name string) error {
	p := filepath.Join(dir, name)
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("failed to stat %s: %w", p, err)
	}
	if st.Dev != w.dev {
		return fmt.Errorf("refusing to remove %s: %w", p, ErrOtherFileSystem)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unlink(parent, name, p, 0)
	}
	fd, err := w.openDir(parent, name, p)
	if err != nil {
		return err
	}
	var errs []error
	if err := w.each(fd, p, func(child string) { errs = append(errs, w.remove(fd, p, child)) }); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return unlink(parent, name, p, unix.AT_REMOVEDIR)
}

// openDir opens the directory name of parent without following a symlink
// and without crossing a mount point, and checks that it is on the cleaned
// file system.
func (w *walker) openDir(parent int, name, p string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := -1, error(unix.ENOSYS)
	if w.openat2 {
		fd, err = unix.Openat2(parent, name, &unix.OpenHow{Flags: flags,
			Resolve: unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH})
		if errors.Is(err, unix.ENOSYS) {
			w.openat2 = false
		}
	}
	if errors.Is(err, unix.ENOSYS) {
		fd, err = unix.Openat(parent, name, flags, 0)
	}
	switch {
	case errors.Is(err, unix.EXDEV):
		return -1, fmt.Errorf("refusing to enter %s: %w", p, ErrOtherFileSystem)
	case err != nil:
		return -1, fmt.Errorf("failed to open %s: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("failed to stat %s: %w", p, err)
	}
	if st.Dev != w.dev || (w.mount >= 0 && mountID(fd) != w.mount) {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("refusing to enter %s: %w", p, ErrOtherFileSystem)
	}
	return fd, nil
}

// mountID returns the ID of the mount an open file is on, or -1 when its
// file system does not say (name_to_handle_at reports it with the handle).
func mountID(fd int) int {
	_, id, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return -1
	}
	return id
}

func unlink(parent int, name, p string, flags int) error {
	if err := unix.Unlinkat(parent, name, flags); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("failed to remove %s: %w", p, err)
	}
	return nil
}
