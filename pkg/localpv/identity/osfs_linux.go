//go:build linux

package identity

import (
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// machineIDPaths are where the host's /etc/machine-id may be, in order: a
// Job's read-only mount of the host's /etc (jobs.MachineIDPath), then the
// host's own (the kubelet). The first that exists is the machine's.
var machineIDPaths = []string{"/host/etc/machine-id", "/etc/machine-id"}

// maxMachineIDFile bounds what is read of a machine-id file.
const maxMachineIDFile = 128

// OSFileSystem reports whether the file system with device number dev
// (st_dev) and UUID uuid is its machine's OS file system: the one that
// holds the machine-id file at machineIDPath (same st_dev, or for a file
// system with anonymous devices such as btrfs subvolumes, the same UUID).
// It returns the machine's ID, empty when the file holds none (an image
// not yet booted).
func OSFileSystem(dev uint64, uuid, machineIDPath string) (string, bool) {
	f, err := os.Open(machineIDPath)
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false
	}
	if st.Dev != dev && (unix.Major(dev) != 0 || !sameUUID(f, uuid)) {
		return "", false
	}
	return readMachineID(f), true
}

// sameUUID reports whether the file system of f has the UUID uuid.
func sameUUID(f *os.File, uuid string) bool {
	if uuid == "" {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return false
	}
	u, ok := openFileSystem{f: f, dev: st.Dev}.uuid()
	return ok && u == uuid
}

// readMachineID returns the machine ID in an open machine-id file: 32
// hexadecimal digits, else "".
func readMachineID(f *os.File) string {
	b, err := io.ReadAll(io.LimitReader(f, maxMachineIDFile))
	if err != nil {
		return ""
	}
	id := strings.ToLower(strings.TrimSpace(string(b)))
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return ""
	}
	return id
}

// hostOSFileSystem is OSFileSystem with the first of machineIDPaths that
// exists.
func hostOSFileSystem(dev uint64, uuid string) (string, bool) {
	for _, p := range machineIDPaths {
		if _, err := os.Stat(p); err == nil {
			return OSFileSystem(dev, uuid, p)
		}
	}
	return "", false
}
