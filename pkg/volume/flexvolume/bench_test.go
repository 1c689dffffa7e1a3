package flexvolume

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
	p, err := NewProber(ctx, root, groupexec.New(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	return p.NewConsumerView().Probe, p.Library()
}

func BenchmarkProbeUnchanged(b *testing.B) {
	for _, impl := range impls {
		b.Run("impl="+impl, func(b *testing.B) {
			root := b.TempDir()
			install(b, root, "bench.example.com~d", "d", benchDriver(filepath.Join(b.TempDir(), "n"), false))
			probe, _ := newImpl(b, impl, root)
			deadline := time.Now().Add(10 * time.Second)
			for found := false; !found; {
				events, _ := probe()
				found = len(events) > 0
				if time.Now().After(deadline) {
					b.Fatal("driver not found")
				}
			}
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

// seen is a plugin returned by Probe, and when.
type seen struct {
	name       string
	attachable bool
	at         time.Time
}

// poll calls probe every interval, like the kubelet's volume manager loops,
// and reports every added or updated plugin.
func poll(probe func() ([]volume.ProbeEvent, error), every time.Duration) (<-chan seen, func()) {
	out := make(chan seen, 1<<16)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			events, _ := probe()
			now := time.Now()
			for _, ev := range events {
				if ev.Op == volume.ProbeAddOrUpdate {
					_, att := ev.Plugin.(volume.AttachableVolumePlugin)
					select {
					case out <- seen{name: ev.PluginName, attachable: att, at: now}:
					default:
					}
				}
			}
		}
	}()
	return out, func() { close(stop); wg.Wait() }
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
// along. Each sample waits a quiet second first (and a random phase of the
// polling period). It reports "<impl>-p50-ms" and "<impl>-p99-ms". Run with
// -benchtime 100x.
func BenchmarkDiscoveryLatency(b *testing.B) {
	for _, every := range []time.Duration{100 * time.Millisecond, time.Millisecond} {
		b.Run(fmt.Sprintf("poll=%v", every), func(b *testing.B) {
			type target struct {
				root string
				ch   <-chan seen
			}
			count := filepath.Join(b.TempDir(), "n")
			targets := map[string]target{}
			for _, impl := range impls {
				root := b.TempDir()
				probe, _ := newImpl(b, impl, root)
				ch, stop := poll(probe, every)
				defer stop()
				targets[impl] = target{root: root, ch: ch}
			}
			lat := map[string][]time.Duration{}
			for i := 0; i < b.N; i++ {
				for k := range impls {
					impl := impls[(i+k)%len(impls)]
					t := targets[impl]
					time.Sleep(1100*time.Millisecond + rand.N(every))
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
			}
			for _, impl := range impls {
				reportPercentiles(b, lat[impl], impl+"-")
			}
		})
	}
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
