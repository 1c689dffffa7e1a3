//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// BenchmarkMountUtilitiesUpgrade: one node, one consumer of a FUSE volume
// the mount pod serves; each iteration sets a new image version and times
// mount-utilities-upgrade end to end (default poll interval), with
// the time of each of its steps.
func BenchmarkMountUtilitiesUpgrade(b *testing.B) {
	c := framework.Connect(b)
	c.RequireFlag(b, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := b.Context()
	b.Cleanup(func() { muRemove(b, c) })
	muDeploy(ctx, b, c)
	steps := map[string][]time.Duration{}
	var total []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		name := fmt.Sprintf("mu-bench-up-%d", i)
		c.CreatePod(ctx, b, muConsumer(name, corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}}))
		c.WaitForPod(ctx, b, name, 120*time.Second, corev1.PodRunning)
		muNewVersion(ctx, b, c, 10+i)
		b.StartTimer()
		start := time.Now()
		out, code := muUpgrade(ctx, b, c, "--timeout", "180", c.NodeName)
		total = append(total, time.Since(start))
		if code != 0 {
			b.Fatalf("exit %d:\n%s", code, out)
		}
		for k, v := range muSteps(out) {
			steps[k] = append(steps[k], time.Duration(v*float64(time.Second)))
		}
		i++
	}
	b.ReportMetric(median(total).Seconds(), "total-p50-s")
	for k, v := range steps {
		b.ReportMetric(median(v).Seconds(), k+"-p50-s")
	}
}
