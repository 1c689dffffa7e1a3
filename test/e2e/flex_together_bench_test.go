//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// BenchmarkFlexDriverInstalledWithPod measures what TestFlexDriverInstalledWithPod
// checks: a flex driver is installed and a pod that uses it is created at
// once; the time is from the install to the pod Running. Side by side in
// one run: "nodeplug" (the binaries as the e2e suite runs them) and
// "upstream" (the same kubelet and kube-controller-manager restarted
// without any --experimental-* flag, so with upstream's flexvolume prober;
// restored afterwards). Each iteration installs a driver of a new name.
// Two orders: the driver installed first and the pod at once, and the pod
// created podFirstLead before the driver. An upstream pod-first attachable
// sample takes minutes: run with -benchtime=3x.
//
//	hack/e2e.sh -run '^$' -bench BenchmarkFlexDriverInstalledWithPod -benchtime=3x
func BenchmarkFlexDriverInstalledWithPod(b *testing.B) {
	c := framework.Connect(b)
	c.RequireFlag(b, "kubelet", "--experimental-flexvolume-discovery")
	c.RequireFlag(b, "kube-controller-manager", "--experimental-flexvolume-discovery")
	loop, err := os.ReadFile(filepath.Join("..", "..", "deploy", "flexvolume", "drivers", "nodeplug.io~loop", "loop"))
	if err != nil {
		b.Fatal(err)
	}
	scripts := map[string]string{"not-attachable": trivialDriver, "attachable": string(loop)}
	for _, mode := range []string{"nodeplug", "upstream"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "upstream" {
				ctx := context.Background()
				restoreKCM := restartComponent(ctx, b, c, "kube-controller-manager", withoutExperimentalFlags)
				b.Cleanup(restoreKCM)
				restoreKubelet := restartComponent(ctx, b, c, "kubelet", withoutExperimentalFlags)
				b.Cleanup(restoreKubelet)
			}
			for _, kind := range []string{"not-attachable", "attachable"} {
				for _, order := range []string{"driver-first", "pod-first"} {
					b.Run(kind+"/"+order, func(b *testing.B) { btMeasure(b, c, mode, kind, scripts[kind], order == "pod-first") })
				}
			}
		})
	}
}

// podFirstLead is how long before its driver the pod is created in the
// pod-first order: the workload lands on a new node a moment before the
// installer DaemonSet has copied the driver.
const podFirstLead = 500 * time.Millisecond

// btMeasure installs a driver and creates its pod at once (or the pod
// podFirstLead before the driver), b.N times. The time runs from the first
// of the two.
func btMeasure(b *testing.B, c *framework.Cluster, mode, kind, script string, podFirst bool) {
	ctx := context.Background()
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		vendor := fmt.Sprintf("bench%d-%s-%s", time.Now().UnixNano()%1e6, mode, strings.ReplaceAll(kind, "-", ""))
		driver := vendor + "/drv"
		opts := map[string]string{}
		if kind == "attachable" {
			opts = map[string]string{"size": "16M", "dir": filepath.Join(c.Dir(b), "shared", vendor)}
		}
		start := time.Now()
		pod := flexPod(fmt.Sprintf("e2e-bench-%d", start.UnixNano()%1e9), driver, opts)
		if podFirst {
			c.CreatePod(ctx, b, pod)
			time.Sleep(podFirstLead)
		}
		installAttachableDriver(b, c, vendor+"~drv", "drv", script)
		if !podFirst {
			c.CreatePod(ctx, b, pod)
		}
		c.WaitForPod(ctx, b, pod.Name, 6*time.Minute, corev1.PodRunning)
		lat = append(lat, time.Since(start))
		b.StopTimer()
		c.DeletePod(b, pod.Name)
		if kind == "attachable" {
			waitLoopReleased(b, filepath.Join(opts["dir"], "data.img"))
		}
		b.StartTimer()
	}
	b.ReportMetric(ms(quantile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(quantile(lat, 1)), "max-ms")
}
