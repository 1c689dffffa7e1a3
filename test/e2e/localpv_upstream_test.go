//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	// upstreamConfig is the upstream provisioner's default configuration.
	upstreamConfig = "testdata/localpv-upstream-config.yaml"
	// upstreamClass is its only class.
	upstreamClass  = "fast-disks"
	upstreamClaim  = "e2e-lpv-upstream"
	shredCommand   = `--command=["/scripts/shred.sh","2"]`
	annHostPath    = "localpv.nodeplug.io/host-path"
	cleanupJobRole = "localpv.nodeplug.io/role=cleanup"
)

// upstreamMarker is what the previous tenant leaves on the disk.
var upstreamMarker = []byte("e2e-lpv-upstream: the previous tenant's data")

// TestLocalPVUpstreamConfig runs the provisioner with the upstream
// provisioner's default configuration (testdata/localpv-upstream-config.yaml)
// unchanged but for its paths. A loop device in the class directory is
// published as an ext4 Filesystem PV; once its claim is released, the
// cleanup Job wipes it with /scripts/shred.sh 2 from the provisioner image,
// and the disk is published again, all zeroes.
func TestLocalPVUpstreamConfig(t *testing.T) {
	c := framework.Connect(t)
	ctx := t.Context()
	disks := newLPVDisks(t, c)
	deployLPV(ctx, t, c, disks)
	useUpstreamConfig(ctx, t, c, disks.fast)

	link, dev := addLoopToClass(t, disks, "upstream0")
	pv := waitForPV(ctx, t, c, link, "", corev1.VolumeAvailable)
	if pv.Spec.StorageClassName != upstreamClass || pv.Spec.VolumeMode == nil || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem ||
		pv.Spec.Local.FSType == nil || *pv.Spec.Local.FSType != "ext4" {
		t.Fatalf("PV %s: class %q, mode %v, local %+v; want class %s, an ext4 Filesystem volume", pv.Name,
			pv.Spec.StorageClassName, pv.Spec.VolumeMode, pv.Spec.Local, upstreamClass)
	}
	claimPod(ctx, t, c, upstreamClaim, pv.Name, "true") // the claim only; no pod uses it
	t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), "delete", "pvc", upstreamClaim, "--ignore-not-found") })
	waitForPV(ctx, t, c, link, "", corev1.VolumeBound)
	writeUpstreamMarkers(t, dev)

	seen := watchCleanupJobs(ctx, t, c)
	deleteClaim(ctx, t, c, upstreamClaim)
	waitForPV(ctx, t, c, link, pv.UID, corev1.VolumeAvailable)
	checkShredJob(t, seen, link)
	requireZeroed(t, dev)
}

// useUpstreamConfig replaces the provisioner's ConfigMap with the upstream
// configuration, its class directory being hostDir, creates the class's
// StorageClass, and restarts the master and the watchers to load it.
func useUpstreamConfig(ctx context.Context, t *testing.T, c *framework.Cluster, hostDir string) {
	t.Helper()
	raw, err := os.ReadFile(upstreamConfig)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.ReplaceAll(string(raw), "HOST_DIR", hostDir), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%s: %d documents, want a ConfigMap and a StorageClass", upstreamConfig, len(docs))
	}
	want, sc := &corev1.ConfigMap{}, &storagev1.StorageClass{}
	mustUnmarshal(t, docs[0], want)
	mustUnmarshal(t, docs[1], sc)
	cms := c.Client.CoreV1().ConfigMaps(lpvNamespace)
	cm, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = want.Data
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
	})
	restartLPV(ctx, t, c)
}

// restartLPV restarts the master and the watchers, and waits until only
// new master pods are left.
func restartLPV(ctx context.Context, t *testing.T, c *framework.Cluster) {
	t.Helper()
	objs := []string{"deployment/local-volume-provisioner-master", "daemonset/local-volume-provisioner-watcher"}
	if _, err := c.Kubectl(ctx, append([]string{"-n", lpvNamespace, "rollout", "restart"}, objs...)...); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if _, err := c.Kubectl(ctx, "-n", lpvNamespace, "rollout", "status", obj, "--timeout=120s"); err != nil {
			logs, _ := c.Kubectl(ctx, "-n", lpvNamespace, "logs", "deployment/local-volume-provisioner-master", "--tail=30")
			t.Fatalf("%v\nmaster log:\n%s", err, logs)
		}
	}
	err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool {
		pods, err := c.Client.CoreV1().Pods(lpvNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=master"})
		return err == nil && !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	})
	if err != nil {
		t.Fatalf("old master pods are still terminating: %v", err)
	}
}

// addLoopToClass links a new loop device from the class directory and
// returns the link and the device.
func addLoopToClass(t *testing.T, d *lpvDisks, name string) (link, dev string) {
	t.Helper()
	link = filepath.Join(d.fast, name)
	if err := os.Rename(d.host(d.addLoop(name)), d.host(link)); err != nil {
		t.Fatal(err)
	}
	return link, d.loops[len(d.loops)-1]
}

// writeUpstreamMarkers writes the marker at the start, the middle and the
// end of the device, as a tenant would.
func writeUpstreamMarkers(t *testing.T, dev string) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, size / 2, size - int64(len(upstreamMarker))} {
		if _, err := f.WriteAt(upstreamMarker, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// requireZeroed fails t unless every byte of dev is zero, as shred.sh's
// last pass leaves it.
func requireZeroed(t *testing.T, dev string) {
	t.Helper()
	b, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(b, upstreamMarker); i >= 0 {
		t.Fatalf("%s still holds the previous tenant's marker at offset %d", dev, i)
	}
	if i := slices.IndexFunc(b, func(c byte) bool { return c != 0 }); i >= 0 {
		t.Fatalf("%s is not all zeroes: byte %d is %#x (read %d bytes)", dev, i, b[i], len(b))
	}
}

// cleanupJobs records every cleanup Job seen by a watch: its container
// arguments and whether it succeeded or failed. The master deletes a Job
// once it has acted on it.
type cleanupJobs struct {
	mu   sync.Mutex
	jobs map[string]seenJob
}

type seenJob struct {
	hostPath          string
	args              []string
	succeeded, failed bool
}

func watchCleanupJobs(ctx context.Context, t *testing.T, c *framework.Cluster) *cleanupJobs {
	t.Helper()
	w, err := c.Client.BatchV1().Jobs(lpvNamespace).Watch(ctx, metav1.ListOptions{LabelSelector: cleanupJobRole})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	r := &cleanupJobs{jobs: map[string]seenJob{}}
	go func() {
		for ev := range w.ResultChan() {
			if j, ok := ev.Object.(*batchv1.Job); ok {
				r.record(j)
			}
		}
	}()
	return r
}

func (r *cleanupJobs) record(j *batchv1.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.jobs[j.Name]
	s.hostPath = j.Annotations[annHostPath]
	if cs := j.Spec.Template.Spec.Containers; len(cs) > 0 {
		s.args = cs[0].Args
	}
	s.succeeded = s.succeeded || j.Status.Succeeded > 0
	s.failed = s.failed || j.Status.Failed > 0
	r.jobs[j.Name] = s
}

// checkShredJob checks that one cleanup Job ran for hostPath, with the
// configured /scripts/shred.sh 2, and succeeded at once.
func checkShredJob(t *testing.T, r *cleanupJobs, hostPath string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []string
	for name, j := range r.jobs {
		if j.hostPath != hostPath {
			continue
		}
		found = append(found, name)
		if !slices.Contains(j.args, shredCommand) || !j.succeeded || j.failed {
			t.Errorf("cleanup Job %s: args %q, succeeded %v, failed %v; want %s to succeed", name, j.args, j.succeeded, j.failed, shredCommand)
		}
	}
	if len(found) != 1 {
		t.Errorf("cleanup Jobs for %s: %q, want exactly one", hostPath, found)
	}
}
