//go:build linux

package identity

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DirectoryFile returns the identity of the directory open as f, read
// through the descriptor alone (name_to_handle_at with AT_EMPTY_PATH, ioctls
// and fstat on f), so that a caller that checks it and then acts through f
// acts on what it checked. It needs no privilege, though some fallbacks for
// the file system's UUID (the superblock) need to open the device. A
// directory on the machine's OS file system gets the machine-bound osfs.
func DirectoryFile(f *os.File) (ID, error) { return DirectoryFileAs(f, "") }

// DirectoryFileAs is DirectoryFile in the form of the identity recorded,
// where the directory has that form: a reader with more rights than the
// one that recorded it (the kubelet, root, against an unprivileged
// discovery that could not read the file system's UUID) computes what
// that reader did, so that the two agree on the same disk and another disk
// still differs. A recorded fhdisk gets the handle with the device's
// identity even where the UUID can be read, fhdev the device number with
// the handle, fs the file system's UUID without the machine; any other
// record, or an unknown one, what DirectoryFile reads. An osfs record
// whose file system and handle are found, but no machine-id file on that
// file system, is an error: which machine the directory is on cannot be
// read (a weak record then mounts as upstream; a cleanup wipes nothing).
func DirectoryFileAs(f *os.File, recorded ID) (ID, error) {
	fd := int(f.Fd())
	h, mountID, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return "", fmt.Errorf("failed to read the file handle of %s: %w", f.Name(), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("failed to stat %s: %w", f.Name(), err)
	}
	fsys := openFileSystem{f: f, dev: st.Dev, mountID: mountID}
	switch recorded.Kind() {
	case KindFileHandleOnDisk:
		if id, ok := fsys.onDisk(h.Type(), h.Bytes()); ok {
			return id, nil
		}
	case KindLocalFileHandle:
		return fsys.local(h.Type(), h.Bytes()), nil
	}
	u, ok := fsys.uuid()
	if !ok {
		return fsys.withoutUUID(h.Type(), h.Bytes()), nil
	}
	if recorded.Kind() == KindFS {
		return FS(u, h.Type(), h.Bytes()), nil
	}
	if machineID, onOS := hostOSFileSystem(st.Dev, u); onOS {
		return OSFS(u, h.Type(), h.Bytes(), machineID), nil
	}
	if id := FS(u, h.Type(), h.Bytes()); !Refines(id, recorded) {
		return id, nil
	}
	// The record's directory, bound to a machine whose machine-id file is
	// not seen: which machine it is on cannot be read.
	return "", fmt.Errorf("%s is on file system %s as recorded, but no machine-id file on it is seen to tell its machine", f.Name(), u)
}

// DeviceFile returns the identity and kernel name of the block device open
// as f: its device number from fstat, then sysfs below sysDir (default
// /sys), as Device reads it.
func DeviceFile(sysDir string, f *os.File) (ID, string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", "", fmt.Errorf("failed to stat %s: %w", f.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return "", "", fmt.Errorf("%s is not a block device", f.Name())
	}
	return deviceByNumber(sysDir, unix.Major(st.Rdev), unix.Minor(st.Rdev))
}

// Directory returns the identity of the directory at path: it opens it once
// and reads DirectoryFile.
func Directory(path string) (ID, error) { return DirectoryAs(path, "") }

// DirectoryAs returns the identity of the directory at path in the form of
// recorded: it opens it once and reads DirectoryFileAs.
func DirectoryAs(path string, recorded ID) (ID, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	return DirectoryFileAs(f, recorded)
}
