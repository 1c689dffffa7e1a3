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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestLocalPVUninstallWhileCleaning acts as an operator who removes the
// provisioner with `kubectl delete -f` while a cleanup Job wipes a released
// disk (the e2e block cleaner sleeps 10 s first). The uninstall completes,
// namespace included, within its timeout (before, the Jobs' cleanup-lock
// finalizer held the namespace Terminating for ever); nothing is lost: the
// released PV stays, and the next install wipes its disk and publishes it
// again.
func TestLocalPVUninstallWhileCleaning(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	d := newLPVDisks(t, c)
	blk := d.addLoop("uninstall0")
	var docs []string
	for _, doc := range lpvManifestDocs(t) {
		docs = append(docs, patchLPVDoc(t, doc, d, nil))
	}
	file := filepath.Join(t.TempDir(), "lpv.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	applyLPV(ctx, t, c, file)

	pv := waitForPV(ctx, t, c, blk, "", corev1.VolumeAvailable)
	pod := claimPod(ctx, t, c, "e2e-lpv-uninstall", pv.Name, "echo tenant-data | dd of=/dev/xvda conv=fsync && sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = nil
	pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	c.CreatePodOn(ctx, t, pod, "")
	c.WaitForPod(ctx, t, pod.Name, 120*time.Second, corev1.PodRunning)
	c.DeletePod(t, pod.Name)
	deleteClaim(ctx, t, c, pod.Name)
	job := waitForCleanupJob(ctx, t, c)

	if out, err := c.Kubectl(ctx, "delete", "-f", file, "--wait", "--timeout=120s"); err != nil {
		jobs, _ := c.Kubectl(ctx, "-n", lpvNamespace, "get", "jobs,pods", "-o", "yaml")
		t.Fatalf("uninstall with cleanup Job %s in flight: %v\n%s\n%s", job, err, out, jobs)
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, lpvNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s after the uninstall: %v, want it gone", lpvNamespace, err)
	}
	kept, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if err != nil || kept.Status.Phase != corev1.VolumeReleased {
		t.Fatalf("PV %s after the uninstall: %v %+v, want it kept Released", pv.Name, err, kept)
	}

	applyLPV(ctx, t, c, file)
	if err := framework.Poll(t.Context(), 180*time.Second, func(ctx context.Context) bool {
		_, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}); err != nil {
		t.Fatalf("PV %s is not wiped and deleted after the reinstall: %v", pv.Name, err)
	}
	waitForPV(ctx, t, c, blk, pv.UID, corev1.VolumeAvailable)
	requireZeroHead(t, d.loops[0])
}
