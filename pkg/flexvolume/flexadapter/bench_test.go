package flexadapter

// Benchmarks of nodeplug's prober side by side with upstream's
// (k8s.io/kubernetes/pkg/volume/flexvolume, GetDynamicPluginProber) in the
// same binary. See docs/flexvolume.md for the commands and the figures.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/volume"
	upstreamflex "k8s.io/kubernetes/pkg/volume/flexvolume"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

var impls = []string{"nodeplug", "upstream"}

// benchDriver is a shell driver whose init appends one byte to countFile.
func benchDriver(countFile string, attach bool) string {
	return fmt.Sprintf("#!/bin/sh\ncase \"$1\" in\ninit) printf x >> %s; echo '{\"status\":\"Success\",\"capabilities\":{\"attach\":%t}}' ;;\n*) echo '{\"status\":\"Not supported\"}' ;;\nesac\n", countFile, attach)
}

// newImpl starts one implementation on root and returns its Probe and, for
// nodeplug, the library prober.
func newImpl(b *testing.B, impl, root string) (func() ([]volume.ProbeEvent, error), prober.Prober) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	if impl == "upstream" {
		p := upstreamflex.GetDynamicPluginProber(ctx, root, utilexec.New())
		if err := p.Init(); err != nil {
			b.Fatal(err)
		}
		return p.Probe, nil
	}
	p, err := NewSource(ctx, root, groupexec.New(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	return p.NewConsumerView().Probe, p.Library()
}

// BenchmarkProbeUnchanged: Probe with nothing changed since the last
// call, with one driver installed and with 500 (issue 37 item 7).
func BenchmarkProbeUnchanged(b *testing.B) {
	for _, n := range []int{1, 500} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("drivers=%d/impl=%s", n, impl), func(b *testing.B) {
				probe, _ := startWithDrivers(b, impl, n)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if events, _ := probe(); len(events) != 0 {
						b.Fatal("unexpected change")
					}
				}
			})
		}
	}
}

// startWithDrivers installs n drivers, starts impl on them and returns once
// Probe has returned all n, with the Probe and the plugin directory.
func startWithDrivers(b *testing.B, impl string, n int) (probeFunc, string) {
	root := b.TempDir()
	installDrivers(b, root, n)
	probe, _ := newImpl(b, impl, root)
	waitAll(b, probe, n)
	return probe, root
}

// installDrivers installs n non-attachable bench drivers in root.
func installDrivers(b *testing.B, root string, n int) {
	count := filepath.Join(b.TempDir(), "n")
	for i := range n {
		install(b, root, fmt.Sprintf("bench.example.com~d%d", i), fmt.Sprintf("d%d", i), benchDriver(count, false))
	}
}

// waitAll calls probe every millisecond until it has returned n plugins.
func waitAll(b *testing.B, probe probeFunc, n int) {
	found := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(found) < n {
		events, _ := probe()
		for _, ev := range events {
			found[ev.PluginName] = true
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d drivers found", len(found), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// seen is a plugin returned by Probe, and when.
type seen struct {
	name       string
	attachable bool
	at         time.Time
}

// poll calls probe every interval, like the kubelet's volume manager loops,
// and reports every added or updated plugin. start is when the ticker
// started: it ticks at start + k*every.
func poll(probe func() ([]volume.ProbeEvent, error), every time.Duration) (out <-chan seen, start time.Time, stop func()) {
	ch := make(chan seen, 1<<16)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start = time.Now()
	t := time.NewTicker(every)
	go func() {
		defer wg.Done()
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			events, _ := probe()
			now := time.Now()
			for _, ev := range events {
				if ev.Op == volume.ProbeAddOrUpdate {
					_, att := ev.Plugin.(volume.AttachableVolumePlugin)
					select {
					case ch <- seen{name: ev.PluginName, attachable: att, at: now}:
					default:
					}
				}
			}
		}
	}()
	return ch, start, func() { close(quit); wg.Wait() }
}

// waitSeen returns when a plugin matching want is seen.
func waitSeen(b *testing.B, ch <-chan seen, want func(seen) bool) time.Time {
	timeout := time.After(60 * time.Second)
	for {
		select {
		case s := <-ch:
			if want(s) {
				return s.at
			}
		case <-timeout:
			b.Fatal("timed out waiting for the plugin")
		}
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration, prefix string) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.5) - 1
		i = max(0, min(i, len(lat)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), prefix+"p50-ms")
	b.ReportMetric(pct(0.99), prefix+"p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDiscoveryLatency measures the time from the atomic rename that
// installs a new driver to Probe returning it, for both implementations in
// the same run. Their samples alternate, and so does which goes first, so
// that a change of load during the run weighs on both alike; both poll all
// along. Each sample waits a quiet second first. Then the rename is timed
// at a random phase of the polling period, the same phase for both
// implementations of a pair, so that the phase's variance (up to a whole
// period) cancels out of their difference. It reports "<impl>-p50-ms",
// "<impl>-p99-ms", and "diff-p50-ms", the median over pairs of nodeplug's
// latency minus upstream's. Run with -benchtime 100x.
func BenchmarkDiscoveryLatency(b *testing.B) {
	for _, every := range []time.Duration{100 * time.Millisecond, time.Millisecond} {
		b.Run(fmt.Sprintf("poll=%v", every), func(b *testing.B) {
			type target struct {
				root  string
				ch    <-chan seen
				start time.Time
			}
			count := filepath.Join(b.TempDir(), "n")
			targets := map[string]target{}
			for _, impl := range impls {
				root := b.TempDir()
				probe, _ := newImpl(b, impl, root)
				ch, start, stop := poll(probe, every)
				defer stop()
				targets[impl] = target{root: root, ch: ch, start: start}
			}
			lat := map[string][]time.Duration{}
			var diffs []time.Duration
			for i := 0; i < b.N; i++ {
				phase := rand.N(every)
				for k := range impls {
					impl := impls[(i+k)%len(impls)]
					t := targets[impl]
					time.Sleep(1100 * time.Millisecond)
					time.Sleep(untilPhase(t.start, every, phase))
					name := fmt.Sprintf("d%d", i)
					stage := filepath.Join(t.root, ".stage-"+name)
					install(b, stage, ".", name, benchDriver(count, false))
					t0 := time.Now()
					if err := os.Rename(stage, filepath.Join(t.root, "bench.example.com~"+name)); err != nil {
						b.Fatal(err)
					}
					at := waitSeen(b, t.ch, func(s seen) bool { return s.name == "bench.example.com/"+name })
					lat[impl] = append(lat[impl], at.Sub(t0))
				}
				diffs = append(diffs, lat["nodeplug"][i]-lat["upstream"][i])
			}
			for _, impl := range impls {
				reportPercentiles(b, lat[impl], impl+"-")
			}
			slices.Sort(diffs)
			b.ReportMetric(float64(diffs[len(diffs)/2].Microseconds())/1000, "diff-p50-ms")
		})
	}
}

// untilPhase returns how long to wait until the next time at phase into the
// polling period of a ticker started at start.
func untilPhase(start time.Time, every, phase time.Duration) time.Duration {
	into := time.Since(start) % every
	return (phase - into + every) % every
}

// BenchmarkDriverInit measures one init call of a shell driver: the floor
// of every flexvolume operation.
func BenchmarkDriverInit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "d")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho '{\"status\":\"Success\",\"capabilities\":{\"attach\":false}}'\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name   string
		runner utilexec.Interface
	}{{"groupexec", groupexec.New()}, {"utilexec", utilexec.New()}} {
		b.Run("runner="+r.name, func(b *testing.B) {
			d := driver.New(path, r.runner, driver.Config{})
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := d.Init(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
