//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestBidirectionalMountPropagation: a privileged pod mounts a tmpfs under
// a hostPath volume with Bidirectional propagation, and the host sees the
// mount and the file written into it.
func TestBidirectionalMountPropagation(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	shared := filepath.Join(c.Dir, "shared")
	target := filepath.Join(shared, "e2e-bidir")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmountAll(t, target) })

	pod := framework.BusyboxPod("e2e-bidir",
		"mount -t tmpfs e2e-bidir-tmpfs /host/e2e-bidir && echo propagated > /host/e2e-bidir/file && sleep 3600")
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	bidir := corev1.MountPropagationBidirectional
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host", MountPropagation: &bidir}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: shared}}}}
	c.CreatePod(ctx, t, pod)
	c.WaitForPod(ctx, t, "e2e-bidir", 90*time.Second, corev1.PodRunning)

	var data []byte
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(target, "file")); err == nil {
			data = b
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.TrimSpace(string(data)) != "propagated" {
		t.Fatalf("host did not see the file written in the pod's tmpfs (got %q)", data)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mountinfo), target+" ") || !strings.Contains(string(mountinfo), "e2e-bidir-tmpfs") {
		t.Fatalf("host mount table has no tmpfs at %s", target)
	}
}
