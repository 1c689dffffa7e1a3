package prober

import (
	"os"
	"syscall"
)

// fingerprint identifies one version of a driver executable: an atomic
// install gives a new inode, an in-place rewrite a new size, mtime or ctime.
type fingerprint struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	mode         uint32
}

func fingerprintOf(fi os.FileInfo) fingerprint {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fingerprint{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}
	}
	return fingerprint{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: st.Mode,
	}
}
