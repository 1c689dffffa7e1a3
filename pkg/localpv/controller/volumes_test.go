package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

const vol1 = "/mnt/fast/vol1"

// published returns a fixture with node a and a published, released vol1.
func released(t *testing.T, extra map[string]string, policy v1.PersistentVolumeReclaimPolicy) (*fixture, string) {
	t.Helper()
	f := newFixture(t, extra, newNode("a", nil), newClass("fast", policy), newClass("blk", policy))
	f.discover("a", fsReport("a", "vol1"))
	name := naming.PVName("a", vol1)
	if f.pv(name) == nil {
		t.Fatal("setup: vol1 not published")
	}
	f.setPhase(name, v1.VolumeReleased, true)
	return f, naming.VolumeID("a", vol1)
}

func TestReleasedPVGetsPinnedCleanupJob(t *testing.T) {
	f, id := released(t, nil, v1.PersistentVolumeReclaimDelete)
	f.sync(volKey(id))
	j := f.job(naming.CleanupJobName(id, 1))
	if j == nil {
		t.Fatalf("no cleanup Job; Jobs: %v", f.jobNames(jobs.RoleCleanup))
	}
	ps := j.Spec.Template.Spec
	if *ps.AutomountServiceAccountToken || ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "a" {
		t.Error("cleanup Job must be pinned to node a and get no token")
	}
	if len(j.Finalizers) != 0 || j.Spec.TTLSecondsAfterFinished != nil {
		t.Error("cleanup Job needs no finalizer (a deleted namespace must not wait for the master) and no TTL (it is " +
			"the lock of its path until the master acted on its result)")
	}
	if j.Annotations[jobs.AnnPVUID] != string(f.pv(naming.PVName("a", vol1)).UID) {
		t.Error("cleanup Job does not name the PV's UID")
	}
	args := strings.Join(ps.Containers[0].Args, " ")
	if !strings.Contains(args, "--kind=d") || !strings.Contains(args, "--path="+vol1) || ps.Containers[0].SecurityContext.Privileged != nil {
		t.Errorf("bad filesystem cleanup container: %s", args)
	}
	f.wantEvent("CleanupStarted")
}

func TestBlockCleanupRunsConfiguredCommandPrivileged(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil), newClass("blk", v1.PersistentVolumeReclaimDelete))
	r := fsReport("a")
	r.Classes[1].Volumes = []report.Volume{{Name: "sdb", Kind: report.KindBlock, Capacity: 1 << 30}}
	f.discover("a", r)
	name := naming.PVName("a", "/mnt/blk/sdb")
	f.setPhase(name, v1.VolumeReleased, true)
	id := naming.VolumeID("a", "/mnt/blk/sdb")
	f.sync(volKey(id))
	j := f.job(naming.CleanupJobName(id, 1))
	ctr := j.Spec.Template.Spec.Containers[0]
	if !slices.Contains(ctr.Args, `--command=["blkdiscard","$(LOCAL_PV_BLKDEVICE)"]`) || !slices.Contains(ctr.Args, "--kind=b") {
		t.Errorf("bad block cleanup args: %v", ctr.Args)
	}
	if ctr.SecurityContext.Privileged == nil || !*ctr.SecurityContext.Privileged {
		t.Error("block cleanup needs a privileged container")
	}
}

func TestRetainPVIsNotCleaned(t *testing.T) {
	f, id := released(t, nil, v1.PersistentVolumeReclaimRetain)
	f.sync(volKey(id))
	if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
		t.Fatalf("Retain PV got cleanup Jobs %v", got)
	}
}

func TestSuccessfulCleanupDeletesPVThenRepublishes(t *testing.T) {
	f, id := released(t, nil, v1.PersistentVolumeReclaimDelete)
	name := naming.PVName("a", vol1)
	f.sync(volKey(id))
	f.finishJob(naming.CleanupJobName(id, 1), true)
	before := counterValue(t, metrics.PVsDeleted.WithLabelValues("cleaned"))
	f.sync(volKey(id))
	if f.pv(name) != nil {
		t.Fatal("PV not deleted after a successful cleanup")
	}
	if counterValue(t, metrics.PVsDeleted.WithLabelValues("cleaned"))-before != 1 {
		t.Error("deleted metric not incremented")
	}
	if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
		t.Fatalf("cleanup Jobs not released: %v", got)
	}
	f.sync(nodeKey("a")) // the master asked for a new discovery
	msgs := mustEncode(t, fsReport("a", "vol1"))
	f.finishJob(naming.DiscoveryJobName("a"), true, msgs...)
	f.sync(nodeKey("a"))
	pv := f.pv(name)
	if pv == nil || pv.Spec.ClaimRef != nil {
		t.Fatal("clean volume was not published again")
	}
}

// TestNoSecondWipeFromStaleCache: after a successful cleanup the PV cache
// can lag behind the Job cache, or the PV can wait for another finalizer;
// the wiped PV must not get a second cleanup Job.
func TestNoSecondWipeFromStaleCache(t *testing.T) {
	tests := []struct {
		name string
		// stale returns the PV as the cache shows it after the wipe.
		stale func(f *fixture, wiped *v1.PersistentVolume) *v1.PersistentVolume
	}{
		{name: "cache still holds the deleted PV", stale: func(_ *fixture, wiped *v1.PersistentVolume) *v1.PersistentVolume {
			return wiped
		}},
		{name: "PV waits for pv-protection", stale: func(f *fixture, wiped *v1.PersistentVolume) *v1.PersistentVolume {
			pv := wiped.DeepCopy()
			pv.Finalizers = []string{"kubernetes.io/pv-protection"}
			pv.DeletionTimestamp = &metav1.Time{Time: f.clock.Now()}
			if _, err := f.kube.CoreV1().PersistentVolumes().Create(f.t.Context(), pv, metav1.CreateOptions{}); err != nil {
				f.t.Fatal(err)
			}
			return pv
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, id := released(t, nil, v1.PersistentVolumeReclaimDelete)
			wiped := f.pv(naming.PVName("a", vol1))
			f.sync(volKey(id))
			f.finishJob(naming.CleanupJobName(id, 1), true)
			f.sync(volKey(id))
			pv := tc.stale(f, wiped)
			if err := f.inf.PVs.Informer().GetStore().Add(pv); err != nil {
				t.Fatal(err)
			}
			_, ctx := ktesting.NewTestContext(t)
			if err := f.c.sync(ctx, volKey(id)); err != nil {
				t.Fatal(err)
			}
			if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
				t.Fatalf("wiped PV got another cleanup Job: %v", got)
			}
		})
	}
}

// TestNoPVWhileCleanupUnfinished is the safety invariant: a volume whose
// cleanup is pending, running or failed gets no PV, even after a restart
// that loses all memory.
func TestNoPVWhileCleanupUnfinished(t *testing.T) {
	for _, state := range []string{"running", "failed", "running after restart", "failed after restart"} {
		t.Run(state, func(t *testing.T) {
			f, id := released(t, map[string]string{config.KeyDeleteUnboundPVsOfDeletedNodes: "true"}, v1.PersistentVolumeReclaimDelete)
			name := naming.PVName("a", vol1)
			f.sync(volKey(id))
			if strings.HasPrefix(state, "failed") {
				f.finishJob(naming.CleanupJobName(id, 1), false)
			}
			// The PV disappears behind the master's back (finalizer removed
			// by hand and deleted); only the Job is left as the lock.
			if err := f.kube.CoreV1().PersistentVolumes().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.syncStores()
			if strings.HasSuffix(state, "after restart") {
				f.restart()
			}
			f.discover("a", fsReport("a", "vol1"))
			if f.pv(name) != nil {
				t.Fatalf("PV published while cleanup is %s", state)
			}
			if len(f.jobNames(jobs.RoleCleanup)) == 0 {
				t.Fatal("the lock Job was released")
			}
		})
	}
}

func TestFailedCleanupIsReportedAndRetriedWithBackoff(t *testing.T) {
	f, id := released(t, nil, v1.PersistentVolumeReclaimDelete)
	name := naming.PVName("a", vol1)
	f.sync(volKey(id))
	before := counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindCleanup))
	f.finishJob(naming.CleanupJobName(id, 1), false, "cleanup failed: device busy")
	f.events()
	f.sync(volKey(id))
	f.wantEvent("device busy")
	if counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindCleanup))-before != 1 {
		t.Error("failure metric not incremented")
	}
	if pv := f.pv(name); pv == nil || pv.Status.Phase != v1.VolumeReleased {
		t.Fatal("PV must stay Released after a failed cleanup")
	}
	if f.job(naming.CleanupJobName(id, 2)) != nil {
		t.Fatal("retried before the backoff")
	}
	f.clock.Step(10 * time.Second)
	f.sync(volKey(id))
	if f.job(naming.CleanupJobName(id, 2)) == nil {
		t.Fatal("not retried after the backoff")
	}
	if f.job(naming.CleanupJobName(id, 1)) != nil {
		t.Fatal("the failed attempt was not released after its successor was created")
	}
	f.sync(volKey(id))
	if counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindCleanup))-before != 1 {
		t.Error("a failure was counted twice")
	}
	f.finishJob(naming.CleanupJobName(id, 2), false)
	f.sync(volKey(id))
	f.clock.Step(15 * time.Second)
	f.sync(volKey(id))
	if f.job(naming.CleanupJobName(id, 3)) != nil {
		t.Fatal("second retry must wait twice as long")
	}
	f.clock.Step(5 * time.Second)
	f.sync(volKey(id))
	if f.job(naming.CleanupJobName(id, 3)) == nil {
		t.Fatal("second retry missing after 20s")
	}
}

func TestOrphanCleanupRetriedUntilSuccessThenPublished(t *testing.T) {
	f, id := released(t, nil, v1.PersistentVolumeReclaimDelete)
	name := naming.PVName("a", vol1)
	f.sync(volKey(id))
	_ = f.kube.CoreV1().PersistentVolumes().Delete(t.Context(), name, metav1.DeleteOptions{})
	f.finishJob(naming.CleanupJobName(id, 1), false)
	f.clock.Step(time.Minute)
	f.sync(volKey(id))
	if f.job(naming.CleanupJobName(id, 2)) == nil {
		t.Fatal("orphan cleanup not retried")
	}
	f.finishJob(naming.CleanupJobName(id, 2), true)
	f.sync(volKey(id))
	if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
		t.Fatalf("lock not released: %v", got)
	}
	f.sync(nodeKey("a"))
	f.finishJob(naming.DiscoveryJobName("a"), true, mustEncode(t, fsReport("a", "vol1"))...)
	f.sync(nodeKey("a"))
	if f.pv(name) == nil {
		t.Fatal("wiped volume not published")
	}
}

func TestVanishedDisks(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "avail", "bound"))
	f.setPhase(naming.PVName("a", "/mnt/fast/avail"), v1.VolumeAvailable, false)
	f.setPhase(naming.PVName("a", "/mnt/fast/bound"), v1.VolumeBound, true)
	f.events()
	errReport := fsReport("a")
	errReport.Classes[0].Error = "permission denied"
	f.discover("a", errReport)
	if f.pv(naming.PVName("a", "/mnt/fast/avail")) == nil {
		t.Fatal("an unreadable class directory must not count as vanished disks")
	}
	f.discover("a", fsReport("a"))
	if f.pv(naming.PVName("a", "/mnt/fast/avail")) != nil {
		t.Error("Available PV of a vanished disk not deleted")
	}
	bound := f.pv(naming.PVName("a", "/mnt/fast/bound"))
	if bound == nil || bound.Annotations[jobs.AnnVolumeMissing] == "" {
		t.Fatal("Bound PV of a vanished disk must be kept and annotated")
	}
	f.wantEvent("VolumeMissing")
	f.discover("a", fsReport("a", "bound"))
	if bound = f.pv(naming.PVName("a", "/mnt/fast/bound")); bound.Annotations[jobs.AnnVolumeMissing] != "" {
		t.Error("missing mark not cleared when the disk came back")
	}
}

func TestDeletedNode(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		name := map[bool]string{true: "unbound PVs deleted", false: "disabled by default"}[enabled]
		t.Run(name, func(t *testing.T) {
			extra := map[string]string{}
			if enabled {
				extra[config.KeyDeleteUnboundPVsOfDeletedNodes] = "true"
			}
			f := newFixture(t, extra, newNode("a", nil), newNode("b", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
			for _, n := range []string{"a", "b"} {
				u, err := v1alpha1.ToUnstructured(&v1alpha1.NodeDiskState{ObjectMeta: metav1.ObjectMeta{Name: n},
					Spec: v1alpha1.NodeDiskStateSpec{NodeName: n, Digest: strings.Repeat("a", 64)}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.dyn.Resource(v1alpha1.SchemeGroupVersionResource).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			f.discover("a", fsReport("a", "avail", "released", "bound"))
			f.setPhase(naming.PVName("a", "/mnt/fast/avail"), v1.VolumeAvailable, false)
			f.setPhase(naming.PVName("a", "/mnt/fast/released"), v1.VolumeReleased, true)
			f.setPhase(naming.PVName("a", "/mnt/fast/bound"), v1.VolumeBound, true)
			if err := f.kube.CoreV1().Nodes().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.syncStores()
			f.sync(nodeKey("a"))
			gone := func(p string) bool { return f.pv(naming.PVName("a", p)) == nil }
			if gone("/mnt/fast/avail") != enabled || gone("/mnt/fast/released") != enabled {
				t.Fatalf("unbound PVs deleted = %v/%v, want %v", gone("/mnt/fast/avail"), gone("/mnt/fast/released"), enabled)
			}
			if gone("/mnt/fast/bound") {
				t.Fatal("a Bound PV was deleted")
			}
			if enabled && f.job(naming.CleanupJobName(naming.VolumeID("a", "/mnt/fast/released"), 1)) == nil {
				t.Fatal("a released PV was deleted without a cleanup Job holding its lock")
			}
			nds := f.dyn.Resource(v1alpha1.SchemeGroupVersionResource)
			if _, err := nds.Get(t.Context(), "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the deleted node's NodeDiskState: Get error = %v, want NotFound", err)
			}
			if _, err := nds.Get(t.Context(), "b", metav1.GetOptions{}); err != nil {
				t.Errorf("another node's NodeDiskState: %v", err)
			}
		})
	}
}

func TestPVDeletionAndFinalizer(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "unused", "used"))
	for _, p := range []string{"unused", "used"} {
		pv := f.pv(naming.PVName("a", "/mnt/fast/"+p))
		now := metav1.NewTime(start)
		pv.DeletionTimestamp = &now
		if p == "used" {
			pv.Spec.ClaimRef = &v1.ObjectReference{Name: "claim"}
			pv.Status.Phase = v1.VolumeReleased
		}
		if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.syncStores()
	f.sync(volKey(naming.VolumeID("a", "/mnt/fast/unused")))
	f.sync(volKey(naming.VolumeID("a", "/mnt/fast/used")))
	if slices.Contains(f.pv(naming.PVName("a", "/mnt/fast/unused")).Finalizers, jobs.FinalizerPVProtection) {
		t.Error("an unused PV being deleted must lose the finalizer")
	}
	if !slices.Contains(f.pv(naming.PVName("a", "/mnt/fast/used")).Finalizers, jobs.FinalizerPVProtection) {
		t.Error("a used PV being deleted must keep the finalizer until wiped")
	}
	if f.job(naming.CleanupJobName(naming.VolumeID("a", "/mnt/fast/used"), 1)) == nil {
		t.Error("a used PV being deleted must be wiped")
	}
}

func TestForgedPVIsNotCleaned(t *testing.T) {
	f, id := released(t, nil, v1.PersistentVolumeReclaimDelete)
	pv := f.pv(naming.PVName("a", vol1))
	pv.Spec.Local.Path = "/etc"
	pv.Annotations[jobs.AnnHostPath] = "/etc"
	if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncStores()
	f.events()
	f.sync(volKey(id))
	if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
		t.Fatalf("a PV pointing outside its class directory got cleanup Jobs %v", got)
	}
	f.wantEvent("CleanupRefused")
}
