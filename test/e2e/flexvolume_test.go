//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// trivialDriver is a flex driver that mounts a tmpfs holding one file.
const trivialDriver = `#!/bin/sh
case "$1" in
init) echo '{"status":"Success","capabilities":{"attach":false}}' ;;
mount)
  mkdir -p "$2" && mount -t tmpfs e2e-flex "$2" && echo "hello from flex" > "$2/hello" &&
    echo '{"status":"Success"}' || echo '{"status":"Failure","message":"mount failed"}' ;;
unmount) umount "$2" && rmdir "$2" 2>/dev/null; echo '{"status":"Success"}' ;;
*) echo '{"status":"Not supported"}' ;;
esac
`

// TestFlexVolumePod: a driver installed into the kubelet's volume plugin
// dir while the cluster runs serves a pod's flexVolume.
func TestFlexVolumePod(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	installDriver(t, c.Node, "nodeplug~e2e-trivial", "e2e-trivial", trivialDriver)

	pod := framework.BusyboxPod("e2e-flex", "cat /data/hello && sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "flex", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "flex", VolumeSource: corev1.VolumeSource{
		FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug/e2e-trivial"}}}}
	c.CreatePod(ctx, t, pod)
	c.WaitForPod(ctx, t, "e2e-flex", 120*time.Second, corev1.PodRunning)
	out, err := c.Kubectl(ctx, "exec", "e2e-flex", "--", "cat", "/data/hello")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "hello from flex" {
		t.Fatalf("flex volume content %q, want %q", out, "hello from flex")
	}
}

// installDriver installs a driver on node n atomically (write a dotfile,
// rename) into <flex dir>/<dir>, and removes that directory when t ends.
func installDriver(t testing.TB, n *framework.Node, dir, name, script string) {
	t.Helper()
	installDriverAt(t, n.HostPath(t, filepath.Join(n.FlexDir(), dir)), name, script)
}

// installAttachableDriver installs an attachable driver on the first node
// and, as an operator installs one on the control plane for its attach and
// detach calls, in the controller-manager's flex dir (the same with one
// node).
func installAttachableDriver(t testing.TB, c *framework.Cluster, dir, name, script string) {
	t.Helper()
	installDriver(t, c.Node, dir, name, script)
	if !c.Node.OnHost() {
		installDriverAt(t, filepath.Join(c.ControllerFlexDir(t), dir), name, script)
	}
}

func installDriverAt(t testing.TB, dir, name, script string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
}
