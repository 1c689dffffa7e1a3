//go:build !linux

package prober

import "os"

// fingerprint identifies one version of a driver executable.
type fingerprint struct {
	size  int64
	mtime int64
	mode  uint32
}

func fingerprintOf(fi os.FileInfo) fingerprint {
	return fingerprint{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}
}
