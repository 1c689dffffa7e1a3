package volumecheck

import (
	"testing"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// BenchmarkCheckDirectory is the check alone on a real directory: its
// identity read with PathReader and compared with the recorded one.
func BenchmarkCheckDirectory(b *testing.B) {
	dir := b.TempDir()
	id, err := identity.Directory(dir)
	if err != nil {
		b.Fatal(err)
	}
	pv := localPV("pv-a", dir, id)
	c := New(klog.Background(), nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Check(pv); err != nil {
			b.Fatal(err)
		}
	}
}
