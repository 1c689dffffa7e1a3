//go:build linux

package socket

import (
	"os"
	"syscall"
)

// Lstat reports whether path is a unix socket (symlinks are not
// followed) and returns its identity.
func Lstat(path string) (ID, bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return ID{}, false, err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return ID{}, false, nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{Ctime: fi.ModTime().UnixNano()}, true, nil
	}
	return ID{Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano()}, true, nil
}
