//go:build !linux

package pluginwatcher

import "os"

// lstatSocket reports whether path is a unix socket (symlinks are not
// followed) and returns its identity. Outside Linux the identity is the
// modification time only.
func lstatSocket(path string) (socketID, bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return socketID{}, false, err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return socketID{}, false, nil
	}
	return socketID{ctime: fi.ModTime().UnixNano()}, true, nil
}
