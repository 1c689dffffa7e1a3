//go:build !linux

package wipe

import (
	"errors"
	"fmt"
	"os"
)

// removeContents fails: directories are only cleaned on Linux, where the
// walk can refuse to cross onto another file system.
func removeContents(dir string) (entries, failed int, err error) {
	return 0, 0, fmt.Errorf("refusing to clean %s: %w", dir, errors.ErrUnsupported)
}

// removeContentsOf fails: directories are only cleaned on Linux.
func removeContentsOf(_ *os.File, dir string) (entries, failed int, err error) {
	return removeContents(dir)
}
