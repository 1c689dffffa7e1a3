//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestFlexDriverInstalledWithPod: a new node gets its flexvolume driver and
// a pod that needs it at the same moment. The pod is created at once after
// the install, without waiting for FlexVolumeDriverLoaded, as a
// scheduler would place it. When the driver loads, the kubelet re-syncs the
// pod and the controller-manager hands it to the attach/detach controller
// again, so the pod does not wait out a mount backoff or the controller's
// 3-minute pod re-list (the 60 s limit is far below that cliff).
func TestFlexDriverInstalledWithPod(t *testing.T) {
	c := framework.Connect(t)
	requireFlexDiscovery(t, c)
	loop, err := os.ReadFile(filepath.Join("..", "..", "deploy", "flexvolume", "drivers", "nodeplug.io~loop", "loop"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		dir, exe, driver, script string
		opts                     map[string]string
	}{
		"not attachable": {dir: "e2e.together~plain", exe: "plain", driver: "e2e.together/plain", script: trivialDriver},
		"attachable": {dir: "e2e.together~loop", exe: "loop", driver: "e2e.together/loop", script: string(loop),
			opts: map[string]string{"size": "32M", "dir": filepath.Join(c.Dir(t), "shared", "together-loop")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			start := time.Now()
			installAttachableDriver(t, c, tc.dir, tc.exe, tc.script)
			pod := flexPod("e2e-together-"+tc.exe, tc.driver, tc.opts)
			c.CreatePod(ctx, t, pod)
			c.WaitForPod(ctx, t, pod.Name, 60*time.Second, corev1.PodRunning)
			t.Logf("driver installed and pod created at once: Running after %v", time.Since(start).Round(10*time.Millisecond))
			if tc.opts["dir"] != "" {
				// The driver is removed when t ends: its volume must be
				// torn down before, as an operator would wait for.
				c.DeletePod(t, pod.Name)
				waitLoopReleased(t, filepath.Join(tc.opts["dir"], pod.Spec.Volumes[0].Name+".img"))
			}
		})
	}
}

// waitLoopReleased waits until no loop device is bound to img: the kubelet
// has unmounted the volume and the driver's unmountdevice released it.
func waitLoopReleased(t testing.TB, img string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.Command("losetup", "-j", img).CombinedOutput()
		if err == nil && len(out) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a loop device is still bound to %s 60 s after the pod was deleted: %s %v", img, out, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
