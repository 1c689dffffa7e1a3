package flexadapter

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/volume"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

// BenchmarkProbeOneUpdated: with n drivers installed, one of them (a
// different one each op) is replaced by an atomic rename of a new
// executable, and Probe, called every 100 µs, returns it. One op runs from
// the rename to that Probe's return. Each op first waits a quiet 1.1 s,
// outside the timer, so that nodeplug's scan spacing (at least 1 s between
// scans once its burst is used) is not what is measured. Reports p50 and
// p99 of the ops; drivers=1 beside drivers=500 shows whether the cost of
// one change grows with the number of installed drivers.
//
//	go test -run '^$' -bench ProbeOneUpdated -benchmem -benchtime 20x ./pkg/flexvolume/flexadapter/
func BenchmarkProbeOneUpdated(b *testing.B) {
	for _, n := range []int{1, 500} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("drivers=%d/impl=%s", n, impl), func(b *testing.B) {
				probe, root := startWithDrivers(b, impl, n)
				count := filepath.Join(b.TempDir(), "n")
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					time.Sleep(1100 * time.Millisecond)
					k := i % n
					dirName, exe := fmt.Sprintf("bench.example.com~d%d", k), fmt.Sprintf("d%d", k)
					stage := filepath.Join(root, dirName, "."+exe)
					version := benchDriver(count, false) + fmt.Sprintf("# version %d\n", i)
					if err := os.WriteFile(stage, []byte(version), 0o755); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					t0 := time.Now()
					if err := os.Rename(stage, filepath.Join(root, dirName, exe)); err != nil {
						b.Fatal(err)
					}
					waitUpdated(b, probe, fmt.Sprintf("bench.example.com/d%d", k))
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				reportPercentiles(b, lat, "")
			})
		}
	}
}

// BenchmarkProbeStart: n drivers are installed, then the prober starts; one
// op runs from its start to Probe (called every millisecond) having
// returned all n. Reports the time per driver too, which stays flat if the
// start-up is linear in the number of drivers.
//
//	go test -run '^$' -bench ProbeStart -benchmem -benchtime 3x ./pkg/flexvolume/flexadapter/
func BenchmarkProbeStart(b *testing.B) {
	for _, n := range []int{100, 500} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("drivers=%d/impl=%s", n, impl), func(b *testing.B) {
				var total time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					root := b.TempDir()
					installDrivers(b, root, n)
					b.StartTimer()
					t0 := time.Now()
					probe, _ := newImpl(b, impl, root)
					waitAll(b, probe, n)
					total += time.Since(t0)
				}
				b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-all-found")
				b.ReportMetric(float64(total.Microseconds())/float64(b.N*n), "µs/driver")
			})
		}
	}
}

type probeFunc func() ([]volume.ProbeEvent, error)

// waitUpdated calls probe every 100 µs until it returns name.
func waitUpdated(b *testing.B, probe probeFunc, name string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		events, _ := probe()
		for _, ev := range events {
			if ev.PluginName == name {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("update of %s not returned", name)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// BenchmarkViewOneChanged: a consumer's Probe after a Snapshot in which one
// of n drivers has a new version (the consumer's side of one driver
// updated; no init, no file system). Its cost per op should grow little
// with n: only the changed names are sorted.
//
//	go test -run '^$' -bench ViewOneChanged -benchmem ./pkg/flexvolume/flexadapter/
func BenchmarkViewOneChanged(b *testing.B) {
	for _, n := range []int{1, 500} {
		b.Run(fmt.Sprintf("drivers=%d", n), func(b *testing.B) {
			entries := make(map[string]*prober.Entry, n)
			for i := range n {
				name := fmt.Sprintf("bench.example.com/d%d", i)
				entries[name] = &prober.Entry{Name: name, Version: uint64(i + 1)}
			}
			v := newConsumerView(&Source{ctx: context.Background()})
			if _, err := v.update(&prober.Snapshot{Entries: entries}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer() // the clone stands for the prober's publication
				next := maps.Clone(entries)
				name := fmt.Sprintf("bench.example.com/d%d", i%n)
				next[name] = &prober.Entry{Name: name, Version: uint64(n + 1 + i)}
				entries = next
				snap := &prober.Snapshot{Entries: next}
				b.StartTimer()
				if events, _ := v.update(snap); len(events) != 1 {
					b.Fatalf("%d events, want 1", len(events))
				}
			}
		})
	}
}
