//go:build !linux

package wipe

import (
	"errors"
	"fmt"
)

// OpenBlockDevice fails: block devices are only wiped on Linux.
func OpenBlockDevice(path string) (Device, error) {
	return nil, fmt.Errorf("refusing to wipe %s: %w", path, errors.ErrUnsupported)
}
