package pluginwatcher

import (
	"io"
	"testing"
	"time"
)

// draVersions is what a DRA driver built on upstream's kubelet-plugin
// helper lists in supported_versions: the gRPC service it serves.
var draVersions = []string{"v1.DRAPlugin"}

// BenchmarkDRARegistrationLatency: BenchmarkRegistrationLatency with a DRA
// driver: from its registration listener being bound to the handler's
// RegisterPlugin, one driver (new name) every 37 ms. The registrar is a
// minimal Registration server answering type DRAPlugin and
// supported_versions v1.DRAPlugin; the handler is the bench handler, which
// only records the call, on both sides.
func BenchmarkDRARegistrationLatency(b *testing.B) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			dir := benchDir(b)
			h := newBenchHandler()
			impl.start(b, benchContext(b, io.Discard), dir, h)
			s := newTypedBenchServer(b, DRAPlugin, draVersions...)
			b.ResetTimer()
			lat := openLoop(b, s, h, dir, "gpu.example.com", 37*time.Millisecond, b.N, nil)
			b.StopTimer()
			reportLatency(b, "", lat)
		})
	}
}
