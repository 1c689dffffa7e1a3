package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// expireJobs does what the apiserver's TTL-after-finished controller does
// once the clock has passed a finished Job's finish time plus its
// ttlSecondsAfterFinished: it deletes the Job. Jobs without a TTL stay.
func (f *fixture) expireJobs() {
	f.t.Helper()
	js, err := f.kube.BatchV1().Jobs(testNS).List(f.t.Context(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, j := range js.Items {
		cond, finished := jobs.FinishTime(&j)
		ttl := j.Spec.TTLSecondsAfterFinished
		if !finished || ttl == nil || f.clock.Now().Before(cond.LastTransitionTime.Add(time.Duration(*ttl)*time.Second)) {
			continue
		}
		if err := f.kube.BatchV1().Jobs(testNS).Delete(f.t.Context(), j.Name, metav1.DeleteOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	f.syncStores()
}

// setJobTTL gives a Job a ttlSecondsAfterFinished, as masters that set one
// on every cleanup Job made them.
func (f *fixture) setJobTTL(name string, seconds int32) {
	f.t.Helper()
	j := f.job(name)
	j.Spec.TTLSecondsAfterFinished = ptr.To(seconds)
	if _, err := f.kube.BatchV1().Jobs(testNS).Update(f.t.Context(), j, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// TestFailedCleanupOutlivesJobTTL: a cleanup Job that failed is the lock
// of its path until the master has acted on its result (a CleanupFailed
// Event, the failure metric, a retry or a CleanupRefused Event), however
// long the master is away: its lifetime is not a TTL. With the PV gone
// (its finalizer removed by hand and the PV deleted) the failed Job is the
// only lock; a Job the TTL-after-finished controller deletes first would let
// the disk, never wiped, be published with the old tenant's data. With the
// PV kept Released, the PV holds the path, but a failure nobody acted on
// would never be reported.
func TestFailedCleanupOutlivesJobTTL(t *testing.T) {
	tests := []struct {
		name string
		// pvGone deletes the PV behind the master's back before the Job fails.
		pvGone bool
		// unidentified strips the disk identity from the Job, as on a Job of
		// an older master, so no retry of it can be made without the PV.
		unidentified bool
		// olderMaster gives the Job the TTL older masters set.
		olderMaster bool
		// seenFirst has the master see the failure before it goes away.
		seenFirst bool
		// wantEvent is what the master says once it is back.
		wantEvent string
	}{
		{name: "PV gone, master away past the TTL", pvGone: true, wantEvent: "CleanupFailed"},
		{name: "PV gone, a Job of an older master with a TTL, master away past it", pvGone: true, olderMaster: true,
			seenFirst: true, wantEvent: "CleanupFailed"},
		{name: "PV gone, an unidentified Job kept as the lock", pvGone: true, unidentified: true, seenFirst: true,
			wantEvent: "records no disk identity"},
		{name: "PV kept Released, master away past the TTL", wantEvent: "CleanupFailed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, pv := releasedOnMachine(t, nil, true)
			id := pv.Labels[jobs.LabelVolumeID]
			f.sync(volKey(id))
			first := naming.CleanupJobName(id, 1)
			if tc.olderMaster {
				f.setJobTTL(first, 3600)
			}
			if tc.unidentified {
				f.stripDiskID(first)
			}
			if tc.pvGone {
				if err := f.kube.CoreV1().PersistentVolumes().Delete(t.Context(), pv.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			failures := counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindCleanup))
			f.failCleanup(first, 1, "cleanup failed: device busy")
			f.events()
			if tc.seenFirst {
				f.sync(volKey(id))
				f.wantEvent("CleanupFailed")
			}

			// The master is away (a crash loop, a lost lease, scaled to
			// zero) for longer than any TTL a cleanup Job ever had.
			f.clock.Step(48 * time.Hour)
			f.expireJobs()
			f.restart()
			f.discover("a", fsReport("a", "vol1"))
			if got := f.pv(pv.Name); tc.pvGone && got != nil {
				if got.Labels[jobs.LabelHeld] == "true" {
					t.Fatal("the disk of a failed cleanup was held: its cleanup Job, the lock, was lost")
				}
				t.Fatal("the unwiped disk of a failed cleanup was published again")
			}
			if f.job(first) == nil {
				t.Fatal("the failed cleanup Job was deleted before the master acted on it")
			}
			f.events()
			f.sync(volKey(id))
			f.wantEvent(tc.wantEvent)
			if tc.unidentified {
				if f.job(first) == nil || f.job(naming.CleanupJobName(id, 2)) != nil {
					t.Errorf("cleanup Jobs %v, want the unidentified Job kept as the lock", f.jobNames(jobs.RoleCleanup))
				}
				return
			}
			if tc.seenFirst {
				return // a restarted master reports a failure again
			}
			if got := counterValue(t, metrics.JobFailures.WithLabelValues(metrics.KindCleanup)) - failures; got != 1 {
				t.Errorf("cleanup failures counted %v times, want once", got)
			}
			if f.job(naming.CleanupJobName(id, 2)) == nil || f.job(first) != nil {
				t.Errorf("cleanup Jobs %v, want the failed attempt retried and then released", f.jobNames(jobs.RoleCleanup))
			}
		})
	}
}

// stripDiskID removes the disk identity from a cleanup Job, as Jobs were
// made before they carried it.
func (f *fixture) stripDiskID(name string) {
	f.t.Helper()
	j := f.job(name)
	delete(j.Annotations, jobs.AnnDiskID)
	ctr := &j.Spec.Template.Spec.Containers[0]
	ctr.Args = slices.DeleteFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--disk-id=") })
	if _, err := f.kube.BatchV1().Jobs(testNS).Update(f.t.Context(), j, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// TestUncleanablePVLetsGoOfItsFinishedJobs: once a PV no longer needs a
// wipe (an admin removed its claim reference to keep its data, or set
// Retain), its finished cleanup Jobs are released, so that a Job with no
// TTL never outlives the decision and is never taken for the result of a
// later release of the PV.
func TestUncleanablePVLetsGoOfItsFinishedJobs(t *testing.T) {
	for _, change := range []string{"claim reference removed", "Retain"} {
		t.Run(change, func(t *testing.T) {
			f, pv := releasedOnMachine(t, nil, true)
			id := pv.Labels[jobs.LabelVolumeID]
			f.sync(volKey(id))
			f.failCleanup(naming.CleanupJobName(id, 1), 1, "cleanup failed: device busy")
			live := f.pv(pv.Name)
			if change == "Retain" {
				live.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
			} else {
				live.Spec.ClaimRef = nil
			}
			if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), live, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.syncStores()
			f.sync(volKey(id))
			if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
				t.Errorf("cleanup Jobs %v kept for a PV that needs no wipe", got)
			}
		})
	}
}

// TestOrphanCleanupDiskIsRemembered: the disk of a cleanup Job whose PV is
// gone (its finalizer removed by hand and the PV deleted) is remembered as
// unwiped as soon as the master sees the Job, so that the lock no longer
// rests on the Job alone: a Job deleted before its wipe succeeded (by an
// admin, or with its namespace) leaves the disk held when it is seen again,
// a Job that found another disk leaves the tenant's disk remembered, and a
// succeeded wipe forgets it and publishes the clean disk.
func TestOrphanCleanupDiskIsRemembered(t *testing.T) {
	tests := []struct {
		name     string
		end      func(f *fixture, job string)
		wantHeld bool
	}{
		{name: "Job deleted before its wipe", wantHeld: true, end: func(f *fixture, job string) {
			if err := f.kube.BatchV1().Jobs(testNS).Delete(f.t.Context(), job, metav1.DeleteOptions{}); err != nil {
				f.t.Fatal(err)
			}
			f.syncStores()
		}},
		{name: "Job found another disk", wantHeld: true, end: func(f *fixture, job string) {
			f.failCleanup(job, jobs.CleanupIdentityMismatchCode, jobs.CleanupIdentityMismatch+"disk: recorded a, found b")
		}},
		{name: "wipe succeeded", end: func(f *fixture, job string) { f.finishJob(job, true) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, pv := releasedOnMachine(t, nil, true)
			id := pv.Labels[jobs.LabelVolumeID]
			f.sync(volKey(id))
			if err := f.kube.CoreV1().PersistentVolumes().Delete(t.Context(), pv.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.syncStores()
			f.sync(volKey(id))
			if len(f.unwipedKeys()) != 1 {
				t.Fatal("the disk of a cleanup Job whose PV is gone is not remembered as unwiped")
			}
			tc.end(f, naming.CleanupJobName(id, 1))
			f.sync(volKey(id))
			f.discover("a", fsReport("a", "vol1"))
			got := f.pv(pv.Name)
			if got == nil {
				t.Fatal("the disk got no PV at all")
			}
			if held := got.Labels[jobs.LabelHeld] == "true"; held != tc.wantHeld {
				t.Errorf("the disk's new PV is held: %t, want %t", held, tc.wantHeld)
			}
			if remembered := len(f.unwipedKeys()) == 1; remembered != tc.wantHeld {
				t.Errorf("the disk is remembered: %t, want %t", remembered, tc.wantHeld)
			}
		})
	}
}

// TestSucceededCleanupLocksUntilReleased: a cleanup Job locks its volume
// and path in every state until the master deletes it, a succeeded one
// too. The master forgets a wiped disk as unwiped before it deletes the
// Job; a lock released at success let a discovery report handled in
// between hold the clean disk as still unwiped (integration
// TestNoPVWhileCleanupUnfinishedAcrossRestarts).
func TestSucceededCleanupLocksUntilReleased(t *testing.T) {
	now := metav1.Now()
	cond := func(c string) batchv1.JobStatus {
		return batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobConditionType(c), Status: v1.ConditionTrue}}}
	}
	tests := []struct {
		name string
		job  batchv1.Job
		want bool
	}{
		{name: "pending", want: true},
		{name: "failed", job: batchv1.Job{Status: cond(string(batchv1.JobFailed))}, want: true},
		{name: "succeeded, not acted on", job: batchv1.Job{Status: cond(string(batchv1.JobComplete))}, want: true},
		{name: "deleted by the master", job: batchv1.Job{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: cond(string(batchv1.JobComplete))}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := locks(&tc.job); got != tc.want {
				t.Errorf("locks = %v, want %v", got, tc.want)
			}
		})
	}
}
