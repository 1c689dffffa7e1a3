//go:build linux

package pluginwatcher

import (
	"os"
	"syscall"
)

// lstatSocket reports whether path is a unix socket (symlinks are not
// followed) and returns its identity.
func lstatSocket(path string) (socketID, bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return socketID{}, false, err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return socketID{}, false, nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return socketID{ctime: fi.ModTime().UnixNano()}, true, nil
	}
	return socketID{dev: st.Dev, ino: st.Ino, ctime: st.Ctim.Nano()}, true, nil
}
