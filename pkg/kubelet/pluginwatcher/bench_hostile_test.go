package pluginwatcher

import (
	"io"
	"testing"
	"time"
)

// BenchmarkRegisterWithHostileSockets: 200 hostile sockets of one class
// (hostileClasses) appear in the directory, then a well-behaved plugin
// starts an instance (new name) every 97 ms. Reports the well-behaved
// plugin's registration latency, from its listener being bound to
// RegisterPlugin. b.N is the number of well-behaved instances; with
// -benchtime 100x the samples span about 10 s, two RPC timeouts, so they
// cover the hostile sockets' first attempts and their retries.
func BenchmarkRegisterWithHostileSockets(b *testing.B) {
	for _, class := range hostileClasses {
		for _, impl := range implementations {
			b.Run(class.name+"/"+impl.name, func(b *testing.B) {
				dir := benchDir(b)
				h := newBenchHandler()
				impl.start(b, benchContext(b, io.Discard), dir, h)
				startHostile(b, class, dir, benchType, DefaultRPCTimeout, hostileCount)
				s := newBenchServer(b)
				b.ResetTimer()
				// Before issue 13 a registration could wait for a
				// full round of hostile timeouts: allow minutes, so that
				// the old behaviour is measured rather than failed.
				lat := openLoopWithin(b, s, h, dir, "good", 97*time.Millisecond, b.N, nil, 3*time.Minute)
				b.StopTimer()
				reportLatency(b, "", lat)
				b.ReportMetric(float64(percentile(lat, 1))/1e6, "max-ms")
			})
		}
	}
}
