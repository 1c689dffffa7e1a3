//go:build linux

package identity

import (
	"fmt"
	"os"
)

// DirectoryFile returns the identity of the open directory f, as Directory
// does for a path: what was opened is what is identified, whatever its path
// leads to by now.
func DirectoryFile(f *os.File) (ID, error) {
	return Directory(fdPath(f))
}

// DeviceFile returns the identity and kernel name of the open block device
// f, as Device does for a path: the device number is the descriptor's
// (/proc/self/fd/N leads to the open file itself), not what a path leads to.
func DeviceFile(sysDir string, f *os.File) (ID, string, error) {
	return Device(sysDir, fdPath(f))
}

func fdPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }
