//go:build !linux

package identity

import (
	"errors"
	"os"
)

// DirectoryFile is only implemented on Linux.
func DirectoryFile(f *os.File) (ID, error) {
	return "", errors.New("directory identity is only read on Linux")
}

// DeviceFile is only implemented on Linux.
func DeviceFile(sysDir string, f *os.File) (ID, string, error) {
	return "", "", errors.New("device identity is only read on Linux")
}
