//go:build !linux

package identity

import (
	"errors"
	"os"
)

// Directory is only implemented on Linux.
func Directory(path string) (ID, error) {
	return "", errors.New("directory identity is only read on Linux")
}

// DirectoryAs is only implemented on Linux.
func DirectoryAs(path string, recorded ID) (ID, error) {
	return "", errors.New("directory identity is only read on Linux")
}

// DirectoryFileAs is only implemented on Linux.
func DirectoryFileAs(f *os.File, recorded ID) (ID, error) {
	return "", errors.New("directory identity is only read on Linux")
}

// DirectoryFile is only implemented on Linux.
func DirectoryFile(f *os.File) (ID, error) {
	return "", errors.New("directory identity is only read on Linux")
}

// DeviceFile is only implemented on Linux.
func DeviceFile(sysDir string, f *os.File) (ID, string, error) {
	return "", "", errors.New("device identity is only read on Linux")
}

func deviceNumber(devPath string) (uint32, uint32, error) {
	return 0, 0, errors.New("device numbers are only read on Linux")
}
