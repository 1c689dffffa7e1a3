package pluginwatcher

import (
	"io"
	"slices"
	"sync"
	"testing"
	"time"
)

// The flood a victim plugin registers in, as in issue 28's measurement
// with the real node-driver-registrar: sockets that accept and never
// answer, sockets that answer garbage, and a plugin that binds 1,000
// sockets a second (flood, keeping the newest 10).
const (
	floodMuteSockets    = 200
	floodGarbageSockets = 50
	// floodWarmUp lets the hostile sockets' first attempts and early
	// retries pass before the victim is timed: the victim starts into a
	// flood already under way.
	floodWarmUp = 2 * time.Second
	// victimWindow is how long one phase (alone or in the flood) starts a
	// victim every 97 ms.
	victimWindow = 10 * time.Second
)

// victimKinds are the plugins timed in BenchmarkVictimCost: a CSI
// driver as node-driver-registrar announces it and a DRA driver as
// upstream's kubelet-plugin helper does.
var victimKinds = []struct {
	name, pluginType string
	versions         []string
}{
	{"csi", CSIPlugin, []string{"1.0.0"}},
	{"dra", DRAPlugin, draVersions},
}

// floodPlace is where a phase of BenchmarkVictimCost runs the flood.
type floodPlace int

const (
	// noFlood: the victim alone.
	noFlood floodPlace = iota
	// floodElsewhere: the same flood in a directory nobody watches, so the
	// machine and the process are as busy as in the flood but the watcher
	// sees none of it: the control that tells the watcher's share of the
	// flood's cost from the generator's.
	floodElsewhere
	// floodInDir: the flood in the watched directory.
	floodInDir
)

func (p floodPlace) String() string {
	return [...]string{"alone", "control", "flood"}[p]
}

// BenchmarkVictimCost: a victim plugin's registration latency alone,
// with the flood elsewhere, and within the flood, the three phases in
// turn, each on a fresh watcher; one op is one round of the three
// (victimWindow each, after floodWarmUp). Reports p50, p99 and mean of
// each, and the flood's cost in percent: the flood's mean (and p50) over
// the victim's alone, and over the control's, minus one. Run it with
// -benchtime 3x.
func BenchmarkVictimCost(b *testing.B) {
	for _, v := range victimKinds {
		for _, impl := range implementations {
			b.Run(v.name+"/"+impl.name, func(b *testing.B) {
				lat := map[floodPlace][]time.Duration{}
				for range b.N {
					for _, place := range []floodPlace{noFlood, floodElsewhere, floodInDir} {
						lat[place] = append(lat[place], victimPhase(b, impl.start, v.pluginType, v.versions, place)...)
					}
				}
				reportVictim(b, lat[noFlood], lat[floodElsewhere], lat[floodInDir])
			})
		}
	}
}

func reportVictim(b *testing.B, alone, control, flooded []time.Duration) {
	for prefix, ds := range map[string][]time.Duration{"alone-": alone, "control-": control, "flood-": flooded} {
		reportLatency(b, prefix, ds)
		b.ReportMetric(float64(mean(ds))/1e6, prefix+"mean-ms")
	}
	cost := func(over, base []time.Duration, q float64) float64 {
		if q < 0 {
			return (float64(mean(over))/float64(mean(base)) - 1) * 100
		}
		return (float64(percentile(over, q))/float64(percentile(base, q)) - 1) * 100
	}
	b.ReportMetric(cost(flooded, alone, -1), "cost-mean-%")
	b.ReportMetric(cost(flooded, alone, 0.5), "cost-p50-%")
	b.ReportMetric(cost(flooded, control, -1), "cost-vs-control-mean-%")
	b.ReportMetric(cost(flooded, control, 0.5), "cost-vs-control-p50-%")
}

// victimPhase starts impl on a fresh directory, the flood where asked,
// and returns the latencies of victims started every 97 ms for
// victimWindow. Only the victims are timed. Everything the phase started
// is stopped before it returns, so that phases do not overlap.
func victimPhase(b *testing.B, start implementation, pluginType string, versions []string, place floodPlace) []time.Duration {
	b.StopTimer()
	p := &phaseTB{B: b}
	defer p.cleanUp()
	dir := benchDir(p)
	h := newBenchHandler()
	start(p, benchContext(p, io.Discard), dir, h)
	switch place {
	case floodElsewhere:
		startFlood(p, benchDir(p))
	case floodInDir:
		startFlood(p, dir)
	}
	time.Sleep(floodWarmUp)
	s := newTypedBenchServer(p, pluginType, versions...)
	b.StartTimer()
	lat := openLoop(p, s, h, dir, "victim", 97*time.Millisecond, int(victimWindow/(97*time.Millisecond)), nil)
	b.StopTimer()
	if testing.Verbose() {
		logSlowVictims(b, place, lat)
	}
	return lat
}

// logSlowVictims logs, with -test.v, the victims that took over 10 ms and
// when they started, counted from the flood's start: that tells a
// victim caught in a burst of hostile retries from one slowed by the load.
func logSlowVictims(b *testing.B, place floodPlace, lat []time.Duration) {
	for i, d := range lat {
		if d > 10*time.Millisecond {
			b.Logf("%v: victim %d, started %v after the flood, took %v", place, i, floodWarmUp+time.Duration(i)*97*time.Millisecond, d)
		}
	}
}

// phaseTB is the benchmark for one phase: its cleanups run when the phase
// ends rather than when the benchmark does.
type phaseTB struct {
	*testing.B
	cleanups []func()
}

func (p *phaseTB) Cleanup(f func()) { p.cleanups = append(p.cleanups, f) }

func (p *phaseTB) cleanUp() {
	for _, f := range slices.Backward(p.cleanups) {
		f()
	}
}

// startFlood creates the never-answering and garbage-answering sockets in
// dir and starts the bind churn; all of it stops when tb cleans up.
func startFlood(tb testing.TB, dir string) {
	startHostileNamed(tb, hostileClassNamed(tb, "accept-never-answer"), dir, "mute", benchType, DefaultRPCTimeout, floodMuteSockets)
	startHostileNamed(tb, hostileClassNamed(tb, "garbage-answer"), dir, "junk", benchType, DefaultRPCTimeout, floodGarbageSockets)
	churn := newBenchServer(tb)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); flood(tb, churn, dir, stop) }()
	tb.Cleanup(func() { close(stop); wg.Wait() })
}

func hostileClassNamed(tb testing.TB, name string) hostileClass {
	for _, c := range hostileClasses {
		if c.name == name {
			return c
		}
	}
	tb.Fatalf("no hostile class %q", name)
	return hostileClass{}
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
