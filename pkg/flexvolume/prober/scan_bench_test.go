package prober

import (
	"fmt"
	"testing"
)

// BenchmarkScanDir measures one scan of a plugin directory with 20 drivers.
func BenchmarkScanDir(b *testing.B) {
	root := b.TempDir()
	for i := 0; i < 20; i++ {
		install(b, root, fmt.Sprintf("example.com~d%d", i), fmt.Sprintf("d%d", i), script(capsNoAttach))
	}
	names := nameCache{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := scanDir(root, names, func(string) (desiredDriver, bool) { return desiredDriver{}, false }); err != nil {
			b.Fatal(err)
		}
	}
}
