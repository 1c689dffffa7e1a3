//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// sampleResource is the extended resource upstream's sample device plugin
// (k8s.io/kubernetes/test/images/sample-device-plugin) advertises, with
// two devices.
const sampleResource = corev1.ResourceName("example.com/resource")

// registrationDir is the directory the kubelet's nodeplug plugin watcher
// watches in the e2e cluster, as the node sees it (hack/e2e.sh).
func registrationDir(t *testing.T, c *framework.Cluster) string {
	t.Helper()
	c.RequireFlag(t, "kubelet", "--experimental-plugin-registration-dir")
	d := os.Getenv("E2E_PLUGIN_REGISTRATION_DIR")
	if d == "" {
		t.Fatal("E2E_PLUGIN_REGISTRATION_DIR is not set; run the e2e suite with hack/e2e.sh")
	}
	return d
}

// TestPluginWatcherSampleDevicePlugin runs upstream's sample device plugin,
// a client nodeplug did not write, with its socket in nodeplug's
// registration directory and its direct registration with the kubelet
// switched off (REGISTER_CONTROL_FILE). It registers only through
// nodeplug's watcher and DevicePlugin handler; the node then advertises
// its resource, and a pod that requests one device runs with it.
func TestPluginWatcherSampleDevicePlugin(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	startSampleDevicePlugin(ctx, t, c, c.Node, registrationDir(t, c))
	waitAllocatable(ctx, t, c, 2)
	pod := devicePod("e2e-device")
	c.CreatePod(ctx, t, pod)
	c.WaitForPod(ctx, t, pod.Name, 90*time.Second, corev1.PodRunning)
	requireOneDevice(ctx, t, c, pod.Name)
}

// requireOneDevice checks that pod got exactly one of the sample plugin's
// devices: the plugin's Allocate mounts /tmp/<device ID> into the
// container, so the pod sees one such file, and its container never
// restarted (its command fails without a device).
func requireOneDevice(ctx context.Context, t *testing.T, c *framework.Cluster, pod string) {
	t.Helper()
	out, err := c.Kubectl(ctx, "exec", pod, "--", "sh", "-c", "ls -d /tmp/Dev-*")
	if err != nil {
		t.Fatalf("pod %s has no sample device: %v\n%s", pod, err, out)
	}
	devs := strings.Fields(out)
	if len(devs) != 1 || (devs[0] != "/tmp/Dev-1" && devs[0] != "/tmp/Dev-2") {
		t.Fatalf("pod %s got devices %q, want exactly one of /tmp/Dev-1, /tmp/Dev-2", pod, devs)
	}
	got, err := c.Client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range got.Status.ContainerStatuses {
		if st.RestartCount != 0 {
			t.Fatalf("pod %s: container %s restarted %d times", pod, st.Name, st.RestartCount)
		}
	}
}

// devicePod returns a busybox pod that requests one sample device and
// lists the devices it got.
func devicePod(name string) *corev1.Pod {
	pod := framework.BusyboxPod(name, "ls /tmp/Dev-* && sleep 3600")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{sampleResource: resource.MustParse("1")}
	return pod
}

// csiPod returns a busybox pod with an inline ephemeral volume of the test
// CSI driver at /data.
func csiPod(name string) *corev1.Pod {
	pod := framework.BusyboxPod(name, "cat /data/hello && sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		CSI: &corev1.CSIVolumeSource{Driver: csiDriverName}}}}
	return pod
}

// startSampleDevicePlugin builds and runs upstream's sample device plugin
// on node n with its socket in regDir (as the node sees it) and its direct
// registration switched off, so that only the watcher registers it; it
// stops when t ends, and t waits until the node offers none of its devices
// any more, so that a later test does not take the stale count for its own
// plugin's.
func startSampleDevicePlugin(ctx context.Context, t *testing.T, c *framework.Cluster, n *framework.Node, regDir string) {
	t.Helper()
	t.Cleanup(func() {
		// t.Context() is already cancelled while cleanups run.
		err := framework.Poll(context.Background(), 90*time.Second,
			func(ctx context.Context) bool {
				node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
				if err != nil {
					return false
				}
				q := node.Status.Allocatable[sampleResource]
				return q.Value() == 0
			})
		if err != nil {
			t.Errorf("node %s still offers %s after the sample device plugin stopped: %v", n.Name, sampleResource, err)
		}
	})
	// The cluster dir, which every node sees.
	dir := filepath.Join(c.Dir(t), "e2e-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sample-device-plugin")
	framework.Run(ctx, t, "go", "build", "-o", bin, "k8s.io/kubernetes/test/images/sample-device-plugin")
	control := filepath.Join(dir, "sample-device-plugin-control-"+n.Name)
	if err := os.WriteFile(control, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n.StartProcess(t, bin, nil, "PLUGIN_SOCK_DIR="+regDir, "REGISTER_CONTROL_FILE="+control)
	t.Cleanup(func() {
		_ = n.RemoveAll(context.Background(), "/tmp/Dev-1")
		_ = n.RemoveAll(context.Background(), "/tmp/Dev-2")
	})
}

// waitAllocatable waits until the node offers at least n sample devices.
func waitAllocatable(ctx context.Context, t *testing.T, c *framework.Cluster, n int64) {
	t.Helper()
	err := framework.Poll(t.Context(), 90*time.Second, func(context.Context) bool {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		q := node.Status.Allocatable[sampleResource]
		return q.Value() >= n
	})
	if err != nil {
		t.Fatalf("node %s does not offer %d %s: %v", c.NodeName, n, sampleResource, err)
	}
}

// createCSIDriverObject creates the CSIDriver object of the test CSI driver
// (no attach, ephemeral volumes) and deletes it when t ends.
func createCSIDriverObject(ctx context.Context, t *testing.T, c *framework.Cluster) {
	t.Helper()
	_, err := c.Client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: csiDriverName},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.StorageV1().CSIDrivers().Delete(context.Background(), csiDriverName, metav1.DeleteOptions{})
	})
}

// TestPluginWatcherCSIDriver: a CSI driver (the minimal one in
// csidriver_test.go, serving upstream's v1 Registration service through
// nodeplug's registrar library) registers through nodeplug's directory.
// The kubelet installs it on its CSINode, a pod's inline ephemeral volume
// of that driver is mounted, and removing the socket de-registers it.
func TestPluginWatcherCSIDriver(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	stopDriver := startCSIDriver(t, c.Node, registrationDir(t, c))

	createCSIDriverObject(ctx, t, c)
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return c.CSINodeHasDriver(ctx, c.NodeName, csiDriverName) }); err != nil {
		t.Fatalf("CSINode %s does not list %s: %v", c.NodeName, csiDriverName, err)
	}

	pod := csiPod("e2e-csi")
	c.CreatePod(ctx, t, pod)
	c.WaitForPod(ctx, t, pod.Name, 90*time.Second, corev1.PodRunning)
	c.RequireFile(ctx, t, pod.Name, "/data/hello", csiGreeting)
	c.DeletePod(t, pod.Name)

	stopDriver()
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return !c.CSINodeHasDriver(ctx, c.NodeName, csiDriverName) }); err != nil {
		t.Fatalf("CSINode %s still lists %s after its socket was removed: %v", c.NodeName, csiDriverName, err)
	}
}
