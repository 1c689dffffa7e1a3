package discovery

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// BenchmarkProbeSignature reads a blank 1 GiB image as the probe reads a
// disk a selector could choose: its start and its end, against every
// signature (the page cache holds the image after the first run).
func BenchmarkProbeSignature(b *testing.B) {
	img := filepath.Join(b.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ProbeSignature(img); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDirectoryIdentity reads a directory's identity (file handle and
// file system UUID), as discovery does for every directory volume.
func BenchmarkDirectoryIdentity(b *testing.B) {
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := identity.Directory(dir); err != nil {
			b.Fatal(err)
		}
	}
}
