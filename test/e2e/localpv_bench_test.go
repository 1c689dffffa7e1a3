//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// BenchmarkLocalPVDiscoveryLatency measures, on the local cluster, the time
// from a new bind mount under a discovery directory to its PV being
// Available, for 20 disks added one after the other while the provisioner
// runs (watcher -> NodeDiskState -> master -> discovery Job -> PV). It
// reports p50 and max in seconds. Run it with -benchtime 1x through
// hack/e2e.sh (see docs/benchmarks.md).
func BenchmarkLocalPVDiscoveryLatency(b *testing.B) {
	c := framework.Connect(b)
	ctx := b.Context()
	disks := newLPVDisks(b, c)
	deployLPV(ctx, b, c, disks)
	var lat []time.Duration
	b.ResetTimer()
	for i := range 20 * b.N {
		start := time.Now()
		path := disks.addDir(fmt.Sprintf("bench%d", i))
		waitForPV(ctx, b, c, path, "", corev1.VolumeAvailable)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2].Seconds(), "p50-s")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "max-s")
	b.ReportMetric(0, "ns/op")
}
