package flexdrivers

import (
	"os"
	"syscall"
)

func inodeOf(fi os.FileInfo) uint64 {
	if fi == nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
