package flexadapter

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStorm replaces one driver's executable 10,000 times over 10 s
// (one atomic rename per millisecond; the last version is not attachable)
// while Probe is polled, and reports the number of driver inits (and, for
// nodeplug, directory scans) per storm, and the latency from the last rename
// to Probe returning the final version.
//
// Opt-in, as each iteration takes over 10 s:
//
//	NODEPLUG_STORM=1 go test -run XXX -bench Storm -benchtime 3x ./pkg/flexvolume/flexadapter/
func BenchmarkStorm(b *testing.B) {
	if os.Getenv("NODEPLUG_STORM") == "" {
		b.Skip("set NODEPLUG_STORM=1 to run the storm benchmark")
	}
	const events, span = 10000, 10 * time.Second
	for _, every := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("impl=%s/poll=%v", impl, every), func(b *testing.B) {
				var inits, scans float64
				lat := make([]time.Duration, 0, b.N)
				for i := 0; i < b.N; i++ {
					n, s, l := stormOnce(b, impl, every, events, span)
					b.Logf("storm %d: %d inits, %d scans, final state after %v", i, n, s, l)
					inits, scans = inits+float64(n), scans+float64(s)
					lat = append(lat, l)
				}
				b.ReportMetric(inits/float64(b.N), "inits/storm")
				if impl == "nodeplug" {
					b.ReportMetric(scans/float64(b.N), "scans/storm")
				}
				reportPercentiles(b, lat, "final-")
			})
		}
	}
}

// stormOnce runs one storm and returns inits, scans and the final latency.
func stormOnce(b *testing.B, impl string, every time.Duration, events int, span time.Duration) (int64, uint64, time.Duration) {
	root := b.TempDir()
	count := filepath.Join(b.TempDir(), "inits")
	install(b, root, "bench.example.com~storm", "storm", benchDriver(count, true))
	probe, lib := newImpl(b, impl, root)
	ch, _, stop := poll(probe, every)
	defer stop()
	waitSeen(b, ch, func(s seen) bool { return s.name == "bench.example.com/storm" })
	before := fileSize(b, count)
	var scans0 uint64
	if lib != nil {
		scans0 = lib.Stats().Scans
	}
	start := time.Now()
	for i := 0; i < events; i++ {
		if d := time.Until(start.Add(span * time.Duration(i) / time.Duration(events))); d > 0 {
			time.Sleep(d)
		}
		install(b, root, "bench.example.com~storm", "storm", benchDriver(count, i != events-1))
	}
	last := time.Now()
	at := waitSeen(b, ch, func(s seen) bool { return s.name == "bench.example.com/storm" && !s.attachable })
	time.Sleep(2 * time.Second) // let trailing inits finish before counting
	var scans uint64
	if lib != nil {
		scans = lib.Stats().Scans - scans0
	}
	return fileSize(b, count) - before, scans, at.Sub(last)
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
