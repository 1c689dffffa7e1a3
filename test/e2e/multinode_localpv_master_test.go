//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// masterMovedDuringCleanup releases the block PV of blk on node n, and,
// while its cleanup Job runs (the e2e block cleaner sleeps 10 s first),
// cordons the master's node and deletes the master pod, as an operator
// draining that node would. The new master runs on another node. Until
// the cleanup Job has succeeded no PV may exist for the disk; then the disk
// is published again, wiped.
func masterMovedDuringCleanup(ctx context.Context, t *testing.T, c *framework.Cluster, n *framework.Node, d *lpvDisks, blk string) {
	pv := waitForPVOn(ctx, t, c, n.Name, blk, "", corev1.VolumeAvailable)
	pod := claimPod(ctx, t, c, "e2e-mn-lpv-block", pv.Name,
		"echo secret-block-data | dd of=/dev/xvda conv=fsync && sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = nil
	pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	c.CreatePodOn(ctx, t, pod, "")
	c.WaitForPod(ctx, t, pod.Name, 120*time.Second, corev1.PodRunning)
	c.DeletePod(t, pod.Name)
	deleteClaim(ctx, t, c, pod.Name)
	job := waitForCleanupJob(ctx, t, c)

	old := masterPod(ctx, t, c)
	if _, err := c.Kubectl(ctx, "cordon", old.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), "uncordon", old.Spec.NodeName) })
	if _, err := c.Kubectl(ctx, "-n", lpvNamespace, "delete", "pod", old.Name, "--grace-period=0", "--force"); err != nil {
		t.Fatal(err)
	}
	// Until the cleanup Job succeeds, no PV may exist for the disk.
	var moved *corev1.Pod
	runningAtTakeOver := false
	err := framework.Poll(t.Context(), 180*time.Second, func(context.Context) bool {
		j, err := c.Client.BatchV1().Jobs(lpvNamespace).Get(ctx, job, metav1.GetOptions{})
		done := apierrors.IsNotFound(err) || (err == nil && j.Status.Succeeded > 0)
		if moved == nil {
			if p := masterPod(ctx, t, c); p.UID != old.UID && framework.PodReady(p) {
				moved, runningAtTakeOver = p, !done
			}
		}
		if p := findPVOn(ctx, t, c, n.Name, blk); p != nil && p.UID != pv.UID && !done {
			t.Fatalf("PV %s for %s exists while cleanup Job %s has not succeeded", p.Name, blk, job)
		}
		return done && moved != nil
	})
	if err != nil {
		t.Fatalf("cleanup Job %s did not succeed, or no new master was scheduled: %v", job, err)
	}
	if moved.Spec.NodeName == old.Spec.NodeName {
		t.Fatalf("the new master %s runs on cordoned node %s", moved.Name, old.Spec.NodeName)
	}
	t.Logf("master moved from %s to %s; cleanup Job %s still running when the new master was Ready: %v",
		old.Spec.NodeName, moved.Spec.NodeName, job, runningAtTakeOver)
	waitForPVOn(ctx, t, c, n.Name, blk, pv.UID, corev1.VolumeAvailable)
	requireZeroHead(t, d.loops[0])
}

// masterPod returns the newest local PV master pod.
func masterPod(ctx context.Context, t testing.TB, c *framework.Cluster) *corev1.Pod {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(lpvNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=master"})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("no master pod: %v", err)
	}
	newest := &list.Items[0]
	for i := range list.Items {
		if list.Items[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &list.Items[i]
		}
	}
	return newest
}

// requireZeroHead fails unless the first 64 bytes of dev are zero.
func requireZeroHead(t testing.TB, dev string) {
	t.Helper()
	head := make([]byte, 64)
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(head, make([]byte, len(head))) {
		t.Fatalf("%s was not wiped: it starts with %q", dev, head)
	}
}
