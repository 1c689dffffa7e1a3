//go:build !linux

package socket

import "os"

// Lstat reports whether path is a unix socket (symlinks are not
// followed) and returns its identity. Outside Linux the identity is the
// modification time only.
func Lstat(path string) (ID, bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return ID{}, false, err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return ID{}, false, nil
	}
	return ID{Ctime: fi.ModTime().UnixNano()}, true, nil
}
