//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestLocalPV runs the distributed local PV provisioner from
// deploy/local-volume-provisioner on the local cluster with real disks:
// bind-mounted directories (Filesystem) and loop devices (Block).
func TestLocalPV(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	disks := newLPVDisks(t, c)
	vol0 := disks.addDir("vol0")
	blk0 := disks.addLoop("blk0")
	deployLPV(ctx, t, c, disks)

	pv0 := waitForPV(ctx, t, c, vol0, "", corev1.VolumeAvailable)
	waitForPV(ctx, t, c, blk0, "", corev1.VolumeAvailable)

	t.Run("a claim binds and a pod writes, then the volume is wiped and published again", func(t *testing.T) {
		c.CreatePod(ctx, t, claimPod(ctx, t, c, "e2e-lpv-writer", pv0.Name, "echo secret > /data/old && sync && sleep 3600"))
		c.WaitForPod(ctx, t, "e2e-lpv-writer", 120*time.Second, corev1.PodRunning)
		c.DeletePod(t, "e2e-lpv-writer")
		deleteClaim(ctx, t, c, "e2e-lpv-writer")
		pv1 := waitForPV(ctx, t, c, vol0, pv0.UID, corev1.VolumeAvailable)

		reader := claimPod(ctx, t, c, "e2e-lpv-reader", pv1.Name, "ls -A /data; test ! -e /data/old && touch /data/clean && sleep 3600")
		c.CreatePod(ctx, t, reader)
		c.WaitForPod(ctx, t, reader.Name, 120*time.Second, corev1.PodRunning)
		c.RequireFile(ctx, t, reader.Name, "/data/clean", "")
		c.DeletePod(t, reader.Name)
		deleteClaim(ctx, t, c, reader.Name)
	})

	t.Run("no PV appears while a cleanup runs, across a master restart", func(t *testing.T) {
		pv := waitForPV(ctx, t, c, blk0, "", corev1.VolumeAvailable)
		pod := claimPod(ctx, t, c, "e2e-lpv-block", pv.Name,
			"echo secret-block-data | dd of=/dev/xvda conv=fsync && sleep 3600")
		pod.Spec.Containers[0].VolumeMounts = nil
		pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
		c.CreatePod(ctx, t, pod)
		c.WaitForPod(ctx, t, pod.Name, 120*time.Second, corev1.PodRunning)
		c.DeletePod(t, pod.Name)
		deleteClaim(ctx, t, c, pod.Name)
		job := waitForCleanupJob(ctx, t, c)
		if _, err := c.Kubectl(ctx, "-n", lpvNamespace, "delete", "pods", "-l",
			"app.kubernetes.io/component=master", "--grace-period=0", "--force"); err != nil {
			t.Fatal(err)
		}
		// Until the cleanup Job succeeds, no PV may exist for the disk.
		err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
			j, err := c.Client.BatchV1().Jobs(lpvNamespace).Get(ctx, job, metav1.GetOptions{})
			done := apierrors.IsNotFound(err) || (err == nil && j.Status.Succeeded > 0)
			if p := findPV(ctx, t, c, blk0); p != nil && p.UID != pv.UID && !done {
				t.Fatalf("PV %s for %s exists while cleanup Job %s has not succeeded", p.Name, blk0, job)
			}
			return done
		})
		if err != nil {
			t.Fatalf("cleanup Job %s did not succeed: %v", job, err)
		}
		waitForPV(ctx, t, c, blk0, pv.UID, corev1.VolumeAvailable)
		requireZeroHead(t, disks.loops[0])
	})

	t.Run("a disk added while everything runs gets a PV", func(t *testing.T) {
		vol1 := disks.addDir("vol1")
		waitForPV(ctx, t, c, vol1, "", corev1.VolumeAvailable)
	})
}

// findPV returns the provisioner's PV for the disk at hostPath, if any.
func findPV(ctx context.Context, t testing.TB, c *framework.Cluster, hostPath string) *corev1.PersistentVolume {
	list, err := c.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: lpvManagedBy})
	if err != nil {
		t.Logf("list PVs: %v", err)
		return nil
	}
	for i, pv := range list.Items {
		if pv.Spec.Local != nil && pv.Spec.Local.Path == hostPath && pv.DeletionTimestamp == nil {
			return &list.Items[i]
		}
	}
	return nil
}

// waitForPV waits for a PV of the disk at hostPath, other than notUID, in
// phase.
func waitForPV(ctx context.Context, t testing.TB, c *framework.Cluster, hostPath string, notUID types.UID, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
		pv = findPV(ctx, t, c, hostPath)
		return pv != nil && pv.UID != notUID && pv.Status.Phase == phase
	})
	if err != nil {
		out, _ := c.Kubectl(ctx, "get", "pv,jobs,pods", "-A", "-o", "wide")
		ev, _ := c.Kubectl(ctx, "get", "events", "-A")
		t.Fatalf("no %s PV for %s: %v\n%s\n%s", phase, hostPath, err, out, ev)
	}
	return pv
}

// claimPod creates a claim bound to pv and returns a pod that uses it at /data.
func claimPod(ctx context.Context, t testing.TB, c *framework.Cluster, name, pvName, script string) *corev1.Pod {
	t.Helper()
	pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &pv.Spec.StorageClassName,
			VolumeMode:       pv.Spec.VolumeMode,
			VolumeName:       pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := framework.BusyboxPod(name, script)
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	return pod
}

func deleteClaim(ctx context.Context, t testing.TB, c *framework.Cluster, name string) {
	t.Helper()
	if _, err := c.Kubectl(ctx, "delete", "pvc", name, "--wait", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
}

// waitForCleanupJob returns the name of the first cleanup Job that appears.
func waitForCleanupJob(ctx context.Context, t testing.TB, c *framework.Cluster) string {
	t.Helper()
	var name string
	err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool {
		list, err := c.Client.BatchV1().Jobs(lpvNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "localpv.nodeplug.io/role=cleanup"})
		for _, j := range list.Items {
			if err == nil && j.Status.Succeeded == 0 {
				name = j.Name
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no running cleanup Job: %v", err)
	}
	return fmt.Sprint(name)
}
