//go:build !linux

package identity

import "errors"

// Directory is only implemented on Linux.
func Directory(path string) (ID, error) {
	return "", errors.New("directory identity is only read on Linux")
}
