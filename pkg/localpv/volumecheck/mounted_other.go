//go:build !linux

package volumecheck

import "errors"

func mountedFrom(string, string) error {
	return errors.New("checking which device a mount is on is only supported on Linux")
}
