package pluginwatcher

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkBurst500: 500 plugins create their sockets at once; one op is
// the time until all 500 are registered.
func BenchmarkBurst500(b *testing.B) { benchBurst(b, 500) }

// BenchmarkBurst1000: 1,000 plugins create their sockets in one directory
// at once (issue 37 item 7); as BenchmarkBurst500.
func BenchmarkBurst1000(b *testing.B) { benchBurst(b, 1000) }

// benchBurst runs bursts of n plugins for each implementation. Besides the
// time until all are registered it reports each plugin's latency from its
// own bind to RegisterPlugin: p50 and p99 over all bursts, and the mean
// latency of the plugin that registered last in each burst.
func benchBurst(b *testing.B, n int) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			dir := benchDir(b)
			h := newBenchHandler()
			impl.start(b, benchContext(b, &discardCounter{}), dir, h)
			s := newBenchServer(b)
			var total, create, last time.Duration
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := burstOnce(b, s, h, dir, i, n)
				create += r.create
				total += r.all
				last += r.last
				lat = append(lat, r.lat...)
			}
			b.StopTimer()
			b.ReportMetric(float64(total)/float64(b.N)/1e6, "ms-all-registered")
			b.ReportMetric(float64(create)/float64(b.N)/1e6, "ms-create")
			b.ReportMetric(float64(last)/float64(b.N)/1e6, "last-ms")
			reportLatency(b, "", lat)
		})
	}
}

// burstResult is one burst's figures: how long creating the sockets took
// and how long until all were registered, both from the first bind; each
// plugin's latency from its own bind; and the latency of the plugin that
// registered last.
type burstResult struct {
	create, all, last time.Duration
	lat               []time.Duration
}

func burstOnce(b *testing.B, s *benchServer, h *benchHandler, dir string, iter, n int) burstResult {
	chans := make([]chan time.Time, n)
	paths := make([]string, n)
	bound := make([]time.Time, n)
	for j := range n {
		name := fmt.Sprintf("b%d-%d", iter, j)
		chans[j] = h.expect(name)
		paths[j] = filepath.Join(dir, name+".sock")
	}
	start := time.Now()
	for j := range n {
		t, err := s.listen(paths[j], fmt.Sprintf("b%d-%d", iter, j))
		if err != nil {
			b.Fatal(err)
		}
		bound[j] = t
	}
	r := burstResult{create: time.Since(start), lat: make([]time.Duration, n)}
	var last time.Time
	for j := range n {
		select {
		case t := <-chans[j]:
			r.lat[j] = t.Sub(bound[j])
			if t.After(last) {
				last, r.last = t, r.lat[j]
			}
		case <-time.After(30 * time.Second):
			b.Fatalf("plugin %d of burst %d not registered", j, iter)
		}
	}
	r.all = last.Sub(start)
	b.StopTimer()
	before := h.deregs.Load()
	for _, p := range paths {
		s.close(p)
	}
	deadline := time.Now().Add(30 * time.Second)
	for h.deregs.Load()-before < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	b.StartTimer()
	return r
}

// discardCounter counts log lines and drops them.
type discardCounter struct{ lines atomic.Int64 }

func (d *discardCounter) Write(p []byte) (int, error) {
	d.lines.Add(int64(bytes.Count(p, []byte{'\n'})))
	return len(p), nil
}

// BenchmarkFlood: one plugin creates and removes 1,000 sockets per second
// for 10 s while a well-behaved plugin starts an instance every 97 ms. Reports the
// well-behaved plugin's latency and the log lines written meanwhile. Run it
// with -benchtime 1x: each op lasts floodDuration.
func BenchmarkFlood(b *testing.B) {
	const floodDuration = 10 * time.Second
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				floodOnce(b, impl.start, floodDuration)
			}
		})
	}
}

func floodOnce(b *testing.B, start implementation, d time.Duration) {
	dir := benchDir(b)
	h := newBenchHandler()
	logs := &discardCounter{}
	ctx := benchContext(b, logs)
	start(b, ctx, dir, h)
	s := newBenchServer(b)
	logs.lines.Store(0)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var created atomic.Int64
	wg.Add(1)
	go func() { defer wg.Done(); created.Store(int64(flood(b, s, dir, stop))) }()

	timer := time.AfterFunc(d, func() { close(stop) })
	defer timer.Stop()
	// The well-behaved plugin starts an instance (new name) every 97 ms.
	lat := openLoop(b, s, h, dir, "calm", 97*time.Millisecond, int(d/(97*time.Millisecond))+1, stop)
	wg.Wait()
	reportLatency(b, "calm-", lat)
	b.ReportMetric(float64(logs.lines.Load()), "log-lines")
	b.ReportMetric(float64(created.Load())/d.Seconds(), "flood-sockets/s")
}

// flood creates one socket per millisecond and keeps the newest 10, so it
// creates and removes about 1,000 sockets per second. It returns how many
// it created.
func flood(b testing.TB, s *benchServer, dir string, stop chan struct{}) int {
	const live = 10
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	var open []string
	n := 0
	begin := time.Now()
	for {
		select {
		case <-stop:
			for _, p := range open {
				s.close(p)
			}
			return n
		case <-t.C:
		}
		// Catch up if ticks were dropped, to hold 1,000 sockets/s.
		for target := int(time.Since(begin) / time.Millisecond); n < target; n++ {
			p := filepath.Join(dir, fmt.Sprintf("flood.%d.sock", n))
			if _, err := s.listen(p, "flood"); err != nil {
				b.Error(err)
				return n
			}
			open = append(open, p)
			if len(open) > live {
				s.close(open[0])
				open = open[1:]
			}
		}
	}
}
