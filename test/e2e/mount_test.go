//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestBidirectionalMountPropagation: a privileged pod mounts a tmpfs under
// a hostPath volume with Bidirectional propagation, and its node sees the
// mount and the file written into it.
func TestBidirectionalMountPropagation(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	n := c.Node
	shared := n.SharedDir()
	target := filepath.Join(shared, "e2e-bidir")
	if err := n.MkdirAll(ctx, target); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.UnmountAll(t, target) })

	pod := framework.BusyboxPod("e2e-bidir",
		"mount -t tmpfs e2e-bidir-tmpfs /host/e2e-bidir && echo propagated > /host/e2e-bidir/file && sleep 3600")
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	bidir := corev1.MountPropagationBidirectional
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host", MountPropagation: &bidir}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: shared}}}}
	c.CreatePod(ctx, t, pod)
	c.WaitForPod(ctx, t, "e2e-bidir", 90*time.Second, corev1.PodRunning)

	var data string
	err := framework.Poll(t.Context(), 30*time.Second, func(context.Context) bool {
		out, err := n.Command(ctx, "cat", filepath.Join(target, "file")).Output()
		data = strings.TrimSpace(string(out))
		return err == nil
	})
	if err != nil || data != "propagated" {
		t.Fatalf("node %s did not see the file written in the pod's tmpfs (got %q)", n.Name, data)
	}
	if typ := n.MountType(ctx, target); typ != "tmpfs" {
		t.Fatalf("node %s has %q at %s, want the pod's tmpfs", n.Name, typ, target)
	}
}
