//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestKubeletRestartKeepsPlugins: the kubelet is restarted while a pod has
// an attachable flex volume mounted and a CSI driver and upstream's sample
// device plugin are registered through nodeplug's watcher. Without any
// action from the plugins (their processes keep running untouched), the new
// kubelet registers them again: a new pod gets a device and a new CSI
// volume. The first pod keeps running (same container, no restart, its
// volume still mounted), and once it is deleted its flex volume is torn
// down and detached.
func TestKubeletRestartKeepsPlugins(t *testing.T) {
	c := framework.Connect(t)
	requireFlexDiscovery(t, c)
	ctx := t.Context()
	regDir := registrationDir(t, c)

	// The plugins, registered through the watcher.
	startSampleDevicePlugin(ctx, t, c, c.Node, regDir)
	startCSIDriver(t, c.Node, regDir)
	createCSIDriverObject(ctx, t, c)
	waitAllocatable(ctx, t, c, 2)
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return c.CSINodeHasDriver(ctx, c.NodeName, csiDriverName) }); err != nil {
		t.Fatalf("CSINode %s does not list %s: %v", c.NodeName, csiDriverName, err)
	}

	// A pod with an attachable flex volume, mounted.
	loop, err := os.ReadFile(filepath.Join("..", "..", "deploy", "flexvolume", "drivers", "nodeplug.io~loop", "loop"))
	if err != nil {
		t.Fatal(err)
	}
	installAttachableDriver(t, c, "e2e.restart~loop", "loop", string(loop))
	imgDir := filepath.Join(c.Dir(t), "shared", "restart-loop")
	pod := flexPod("e2e-restart-flex", "e2e.restart/loop", map[string]string{"size": "32M", "dir": imgDir})
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo before > /data/marker && sleep 3600"}
	c.CreatePod(ctx, t, pod)
	before := c.WaitForPod(ctx, t, pod.Name, 90*time.Second, corev1.PodRunning)
	c.RequireFile(ctx, t, pod.Name, "/data/marker", "before")
	regsBefore := krRegistrations(ctx, t, c)

	muRestartKubelet(ctx, t, c)

	// The plugins are registered again by the new kubelet.
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool {
		r := krRegistrations(ctx, t, c)
		return r["CSIPlugin"] >= 1 && r["DevicePlugin"] >= 1
	}); err != nil {
		t.Fatalf("after the restart the watcher registered %v (before it: %v), want CSIPlugin and DevicePlugin", krRegistrations(ctx, t, c), regsBefore)
	}
	waitAllocatable(ctx, t, c, 2)
	dev := devicePod("e2e-restart-device")
	c.CreatePod(ctx, t, dev)
	vol := csiPod("e2e-restart-csi")
	c.CreatePod(ctx, t, vol)
	c.WaitForPod(ctx, t, dev.Name, 90*time.Second, corev1.PodRunning)
	requireOneDevice(ctx, t, c, dev.Name)
	c.WaitForPod(ctx, t, vol.Name, 90*time.Second, corev1.PodRunning)
	c.RequireFile(ctx, t, vol.Name, "/data/hello", csiGreeting)

	// The flex pod kept running on its volume.
	after, err := c.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := krContainer(after), krContainer(before); got != want {
		t.Errorf("the flex pod's container after the restart: %s, want %s (unchanged)", got, want)
	}
	c.RequireFile(ctx, t, pod.Name, "/data/marker", "before")

	// Deleted, its volume is torn down and detached.
	c.DeletePod(t, pod.Name)
	waitLoopReleased(t, filepath.Join(imgDir, "data.img"))
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return !krAttached(ctx, c, "e2e.restart/loop/data") }); err != nil {
		t.Fatalf("node %s still lists e2e.restart/loop/data attached: %v", c.NodeName, err)
	}
}

// krRegistrations reads the running kubelet's registrations_total counter
// by plugin type (through the apiserver's node proxy).
func krRegistrations(ctx context.Context, t *testing.T, c *framework.Cluster) map[string]float64 {
	t.Helper()
	text, err := c.KubeletMetrics(ctx, c.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	return framework.MetricSumBy(text, "nodeplug_plugin_watcher_registrations_total", "plugin_type")
}

func krContainer(p *corev1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 {
		return "none"
	}
	s := p.Status.ContainerStatuses[0]
	return fmt.Sprintf("%s (restarts %d)", s.ContainerID, s.RestartCount)
}

// krAttached reports whether the node reports volume attached (true when
// the Node cannot be read, so that a wait for the detach goes on).
func krAttached(ctx context.Context, c *framework.Cluster, volume string) bool {
	ok, err := c.NodeAttached(ctx, c.NodeName, func(v string) bool { return v == volume })
	return ok || err != nil
}
