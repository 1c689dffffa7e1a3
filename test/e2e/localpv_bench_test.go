//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// BenchmarkLocalPVDiscoveryLatency measures, on the local cluster, the time
// from a new bind mount under a discovery directory to its PV being
// Available, for 20 disks added one after the other while the provisioner
// runs (watcher -> NodeDiskState -> master -> discovery Job -> PV). Times
// are taken on arrival of watch events, not by polling. Each mount comes
// after a random pause of up to a second, so that samples do not lock onto
// the phase of the kubelet's once-a-second container state check (PLEG). It reports p50 and
// max in seconds, and the p50 of the time to each stage of the pipeline
// ("<stage>-p50-s"). Run it with -benchtime 1x through hack/e2e.sh (see
// docs/benchmarks.md).
func BenchmarkLocalPVDiscoveryLatency(b *testing.B) {
	c := framework.Connect(b)
	ctx := b.Context()
	disks := newLPVDisks(b, c)
	deployLPV(ctx, b, c, disks)
	tr := newLPVTracer(ctx, b, c)
	var lat []time.Duration
	stages := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range 20 * b.N {
		time.Sleep(rand.N(time.Second))
		start := time.Now()
		path := disks.addDir(fmt.Sprintf("bench%d", i))
		lat = append(lat, tr.waitAvailable(b, path, 120*time.Second).Sub(start))
		for stage, d := range tr.stagesSince(start) {
			stages[stage] = append(stages[stage], d)
		}
	}
	b.StopTimer()
	b.ReportMetric(median(lat).Seconds(), "p50-s")
	b.ReportMetric(slices.Max(lat).Seconds(), "max-s")
	for _, stage := range lpvStages {
		if len(stages[stage]) > 0 {
			b.ReportMetric(median(stages[stage]).Seconds(), stage+"-p50-s")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// median returns the upper median of d.
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
