package cleanupjobs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// Sync drives the cleanup of one volume. The state machine lives in
// the PV's phase and the volume's cleanup Jobs, so it survives restarts.
func (r *runner) Sync(ctx context.Context, id string) error {
	pv, err := r.Volumes.PV(id)
	if err != nil {
		return err
	}
	js, err := r.Volumes.Jobs(id)
	if err != nil {
		return err
	}
	if err := r.keepUntilActedOn(ctx, js); err != nil {
		return err
	}
	var latest *batchv1.Job
	if len(js) > 0 {
		latest = js[len(js)-1]
	}
	if pv == nil {
		return r.syncOrphanCleanup(ctx, id, latest, js)
	}
	if handled, err := r.syncHeldPV(ctx, pv); handled {
		return err
	}
	if handled, err := r.syncNodeGonePV(ctx, pv, latest); handled {
		return err
	}
	if pvops.Cleanable(pv) && r.replacedPV(pv) && (latest == nil || latest.Annotations[jobs.AnnPVUID] != string(pv.UID)) {
		// Never wipe under the new machine: a discovery report decides
		// whether the disk stayed (the PV is handed over, then wiped) or
		// left (the PV is dropped without a wipe).
		return nil
	}
	if !pvops.Cleanable(pv) {
		return r.syncUncleanablePV(ctx, pv, js)
	}
	if latest == nil || latest.Annotations[jobs.AnnPVUID] != string(pv.UID) {
		if latest != nil {
			if finished, _ := jobs.IsFinished(latest); !finished {
				return nil // an older run still wipes the disk; wait for it
			}
		}
		if dirty, err := r.stillDirty(ctx, pv); err != nil || !dirty {
			return err
		}
		if _, err := r.startCleanup(ctx, pv, jobs.NextAttempt(js)); err != nil {
			return err
		}
		return r.releaseJobs(ctx, js)
	}
	switch finished, succeeded := jobs.IsFinished(latest); {
	case !finished:
		return nil
	case succeeded:
		return r.finishCleanup(ctx, pv, latest, js)
	}
	if m, ok := r.cleanupMismatch(latest); ok {
		if m.what == jobs.CleanupMismatchMachine {
			return r.machineMismatch(ctx, id, pv, latest, js, m)
		}
		return r.dropMismatchedPV(ctx, pv, latest, js, m)
	}
	return r.retryCleanup(ctx, id, pv, latest, js)
}

// stillDirty asks the apiserver whether a PV the cache shows as needing a
// wipe still does. Right after a wipe the cache can still hold the PV the
// master deleted (or the PV can wait for another finalizer, such as
// kubernetes.io/pv-protection) while the released Jobs are already gone; a
// PV that is gone, replaced, or deleted without the master's finalizer was
// already handled, and its disk must not be wiped a second time.
func (r *runner) stillDirty(ctx context.Context, pv *v1.PersistentVolume) (bool, error) {
	live, err := r.Kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to get PV %s: %w", pv.Name, err)
	}
	return live.UID == pv.UID && pvops.Cleanable(live) &&
		(live.DeletionTimestamp == nil || slices.Contains(live.Finalizers, jobs.FinalizerPVProtection)), nil
}

// syncUncleanablePV lets go of PVs that need no wipe and of their finished
// Jobs: the PV holds its path, and a Job of it kept past the decision not
// to wipe (its claim reference removed, Retain set) could be taken for the
// result of a later release.
func (r *runner) syncUncleanablePV(ctx context.Context, pv *v1.PersistentVolume, js []*batchv1.Job) error {
	if pv.DeletionTimestamp != nil && (pv.Spec.ClaimRef == nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete) {
		if err := r.Ops.RemoveFinalizer(ctx, pv); err != nil {
			return err
		}
	}
	var stale []*batchv1.Job
	for _, j := range js {
		if finished, _ := jobs.IsFinished(j); finished {
			stale = append(stale, j)
		}
	}
	return r.releaseJobs(ctx, stale)
}

// keepUntilActedOn removes the ttlSecondsAfterFinished that older masters
// set on cleanup Jobs: a finished Job stays the lock of its path until the
// master has acted on its result, however long no master runs.
func (r *runner) keepUntilActedOn(ctx context.Context, js []*batchv1.Job) error {
	var errs []error
	for _, j := range js {
		if j.Spec.TTLSecondsAfterFinished == nil || j.DeletionTimestamp != nil {
			continue
		}
		cp := j.DeepCopy()
		cp.Spec.TTLSecondsAfterFinished = nil
		if _, err := r.Kube.BatchV1().Jobs(j.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to remove the TTL of cleanup Job %s: %w", j.Name, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Removed the TTL of a cleanup Job", "job", klog.KObj(j))
	}
	return errors.Join(errs...)
}

// syncOrphanCleanup handles cleanup Jobs whose PV is gone: they keep running
// and retrying until the disk is wiped, and only then release the volume.
// A Job that found another machine or disk is released without a retry.
func (r *runner) syncOrphanCleanup(ctx context.Context, id string, latest *batchv1.Job, js []*batchv1.Job) error {
	if latest == nil {
		return nil
	}
	finished, succeeded := jobs.IsFinished(latest)
	if !succeeded {
		if err := r.rememberOrphan(ctx, latest); err != nil {
			return err
		}
	}
	switch {
	case !finished:
		return nil
	case succeeded:
		r.observeCleanup(latest, "succeeded")
		if err := r.finishReturnedDisk(ctx, latest); err != nil {
			return err
		}
		if err := r.releaseJobs(ctx, js); err != nil {
			return err
		}
		r.RequestDiscovery(latest.Annotations[jobs.AnnNode])
		return nil
	}
	if m, ok := r.cleanupMismatch(latest); ok {
		return r.releaseMismatchedOrphan(ctx, latest, js, m)
	}
	return r.retryCleanup(ctx, id, latest, latest, js)
}
