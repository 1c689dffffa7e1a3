package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// cleanable reports whether a PV's disk must be wiped before reuse.
func cleanable(pv *v1.PersistentVolume) bool {
	return pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete &&
		(pv.Status.Phase == v1.VolumeReleased || pv.Status.Phase == v1.VolumeFailed)
}

// syncVolume drives the cleanup of one volume. The state machine lives in
// the PV's phase and the volume's cleanup Jobs, so it survives restarts.
func (c *controller) syncVolume(ctx context.Context, id string) error {
	pv, err := c.managedPV(id)
	if err != nil {
		return err
	}
	js, err := c.cleanupJobs(id)
	if err != nil {
		return err
	}
	var latest *batchv1.Job
	if len(js) > 0 {
		latest = js[len(js)-1]
	}
	if pv == nil {
		return c.syncOrphanCleanup(ctx, id, latest, js)
	}
	if handled, err := c.syncNodeGonePV(ctx, pv, latest); handled {
		return err
	}
	if cleanable(pv) && c.replacedPV(pv) && (latest == nil || latest.Annotations[jobs.AnnPVUID] != string(pv.UID)) {
		// Never wipe under the new machine: a discovery report decides
		// whether the disk stayed (the PV is handed over, then wiped) or
		// left (the PV is dropped without a wipe).
		return nil
	}
	if !cleanable(pv) {
		return c.syncUncleanablePV(ctx, pv, js)
	}
	if latest == nil || latest.Annotations[jobs.AnnPVUID] != string(pv.UID) {
		if latest != nil {
			if finished, _ := jobs.IsFinished(latest); !finished {
				return nil // an older run still wipes the disk; wait for it
			}
		}
		if dirty, err := c.stillDirty(ctx, pv); err != nil || !dirty {
			return err
		}
		if _, err := c.startCleanup(ctx, pv, nextAttempt(js)); err != nil {
			return err
		}
		return c.releaseJobs(ctx, js)
	}
	switch finished, succeeded := jobs.IsFinished(latest); {
	case !finished:
		return nil
	case succeeded:
		return c.finishCleanup(ctx, pv, latest, js)
	}
	if m, ok := c.cleanupMismatch(latest); ok {
		if m.what == jobs.CleanupMismatchMachine {
			return c.machineMismatch(ctx, id, pv, latest, js, m)
		}
		return c.dropMismatchedPV(ctx, pv, latest, js, m)
	}
	return c.retryCleanup(ctx, id, pv, latest, js)
}

// stillDirty asks the apiserver whether a PV the cache shows as needing a
// wipe still does. Right after a wipe the cache can still hold the PV the
// master deleted (or the PV can wait for another finalizer, such as
// kubernetes.io/pv-protection) while the released Jobs are already gone; a
// PV that is gone, replaced, or deleted without the master's finalizer was
// already handled, and its disk must not be wiped a second time.
func (c *controller) stillDirty(ctx context.Context, pv *v1.PersistentVolume) (bool, error) {
	live, err := c.kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to get PV %s: %w", pv.Name, err)
	}
	return live.UID == pv.UID && cleanable(live) &&
		(live.DeletionTimestamp == nil || slices.Contains(live.Finalizers, jobs.FinalizerPVProtection)), nil
}

// syncUncleanablePV lets go of PVs that need no wipe and drops stale locks.
func (c *controller) syncUncleanablePV(ctx context.Context, pv *v1.PersistentVolume, js []*batchv1.Job) error {
	if pv.DeletionTimestamp != nil && (pv.Spec.ClaimRef == nil || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete) {
		if err := c.ops.RemoveFinalizer(ctx, pv); err != nil {
			return err
		}
	}
	var stale []*batchv1.Job
	for _, j := range js {
		if finished, _ := jobs.IsFinished(j); finished && j.Annotations[jobs.AnnPVUID] != string(pv.UID) {
			stale = append(stale, j)
		}
	}
	return c.releaseJobs(ctx, stale)
}

// syncOrphanCleanup handles cleanup Jobs whose PV is gone: they keep running
// and retrying until the disk is wiped, and only then release the volume.
// A Job that found another machine or disk is released without a retry.
func (c *controller) syncOrphanCleanup(ctx context.Context, id string, latest *batchv1.Job, js []*batchv1.Job) error {
	if latest == nil {
		return nil
	}
	switch finished, succeeded := jobs.IsFinished(latest); {
	case !finished:
		return nil
	case succeeded:
		c.observeCleanup(latest, "succeeded")
		if err := c.finishReturnedDisk(ctx, latest); err != nil {
			return err
		}
		if err := c.releaseJobs(ctx, js); err != nil {
			return err
		}
		c.requestDiscovery(latest.Annotations[jobs.AnnNode])
		return nil
	}
	if m, ok := c.cleanupMismatch(latest); ok {
		return c.releaseMismatchedOrphan(ctx, latest, js, m)
	}
	return c.retryCleanup(ctx, id, latest, latest, js)
}

func nextAttempt(js []*batchv1.Job) int {
	n := 0
	for _, j := range js {
		n = max(n, jobs.Attempt(j))
	}
	return n + 1
}

// cleanupTarget checks a PV before its disk is wiped: its class must still be
// configured, its path must be a direct child of the class's host
// directory, so a forged PV cannot point a wipe elsewhere, and it must have
// recorded its disk's identity, which the Job checks on the node together
// with the recorded machine.
func (c *controller) cleanupTarget(pv *v1.PersistentVolume) (jobs.CleanupTarget, error) {
	class, path := pv.Annotations[jobs.AnnClass], pv.Annotations[jobs.AnnHostPath]
	mc, ok := c.cfg.StorageClassMap[class]
	if !ok {
		return jobs.CleanupTarget{}, fmt.Errorf("class %q is not configured", class)
	}
	if pv.Spec.Local == nil || pv.Spec.Local.Path != path {
		return jobs.CleanupTarget{}, fmt.Errorf("spec.local.path does not match annotation %s", jobs.AnnHostPath)
	}
	if p, err := validation.HostPath(mc.HostDir, filepath.Base(path)); err != nil || p != path {
		return jobs.CleanupTarget{}, fmt.Errorf("path %q is not a direct child of %s", path, mc.HostDir)
	}
	kind := report.VolumeKind(pv.Annotations[jobs.AnnKind])
	if kind != report.KindDirectory && kind != report.KindBlock {
		return jobs.CleanupTarget{}, fmt.Errorf("unknown volume kind %q", kind)
	}
	disk, err := recordedDisk(pv)
	if err != nil {
		return jobs.CleanupTarget{}, err
	}
	m := machine.Recorded(pv)
	for _, v := range []string{m.ID, m.UUID} {
		if len(v) > 128 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return jobs.CleanupTarget{}, fmt.Errorf("the recorded machine identity %q is not printable ASCII of at most 128 bytes", v)
		}
	}
	return jobs.CleanupTarget{PVName: pv.Name, PVUID: string(pv.UID), NodeName: pv.Annotations[jobs.AnnNode],
		Class: class, Kind: kind, HostPath: path, Mount: mc, VolumeID: pv.Labels[jobs.LabelVolumeID],
		MachineID: m.ID, SystemUUID: m.UUID, DiskID: disk}, nil
}

// recordedDisk returns the disk identity a PV recorded. A PV without one
// cannot be wiped: no Job could prove that its path still leads to its disk.
func recordedDisk(pv *v1.PersistentVolume) (identity.ID, error) {
	disk := identity.ID(pv.Annotations[jobs.AnnDiskID])
	if disk == "" {
		return "", fmt.Errorf("the disk's identity was never recorded (no %s annotation), so no cleanup can prove it wipes this PV's disk", jobs.AnnDiskID)
	}
	if err := disk.Valid(); err != nil {
		return "", fmt.Errorf("annotation %s: %w", jobs.AnnDiskID, err)
	}
	return disk, nil
}

// startCleanup creates the cleanup Job of a PV's attempt, and reports
// whether one exists now. A PV that cannot be wiped gets a CleanupRefused
// Event and no Job.
func (c *controller) startCleanup(ctx context.Context, pv *v1.PersistentVolume, attempt int) (bool, error) {
	t, err := c.cleanupTarget(pv)
	if err != nil {
		c.event(pv, v1.EventTypeWarning, "CleanupRefused", "Volume is not wiped: %v; the PV stays %s", err, pv.Status.Phase)
		return false, nil
	}
	job := jobs.CleanupJob(c.opts.Jobs, c.cfg, t, attempt)
	if _, err := c.kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		return false, fmt.Errorf("failed to create cleanup Job for PV %s: %w", pv.Name, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindCleanup).Inc()
	c.event(pv, v1.EventTypeNormal, "CleanupStarted", "Cleanup Job %s started (attempt %d)", job.Name, attempt)
	klog.FromContext(ctx).V(2).Info("Created cleanup Job", "pv", pv.Name, "job", klog.KObj(job))
	return true, nil
}

// ensureCleanupJob creates a cleanup Job for a PV unless one for it exists.
// A PV that cannot be wiped gets a CleanupRefused Event and an error, so
// that it is kept.
func (c *controller) ensureCleanupJob(ctx context.Context, pv *v1.PersistentVolume) error {
	js, err := c.cleanupJobs(pv.Labels[jobs.LabelVolumeID])
	if err != nil {
		return err
	}
	for _, j := range js {
		if j.Annotations[jobs.AnnPVUID] == string(pv.UID) {
			return nil
		}
	}
	if _, err := c.cleanupTarget(pv); err != nil {
		c.event(pv, v1.EventTypeWarning, "CleanupRefused", "Volume is not wiped: %v; the PV stays %s", err, pv.Status.Phase)
		return fmt.Errorf("cannot queue cleanup of PV %s: %w", pv.Name, err)
	}
	_, err = c.startCleanup(ctx, pv, nextAttempt(js))
	return err
}

// finishCleanup deletes a wiped PV, then releases its Jobs so the next
// discovery publishes the clean disk again.
func (c *controller) finishCleanup(ctx context.Context, pv *v1.PersistentVolume, job *batchv1.Job, js []*batchv1.Job) error {
	c.observeCleanup(job, "succeeded")
	if err := c.ops.RemoveFinalizer(ctx, pv); err != nil {
		return err
	}
	if pv.DeletionTimestamp == nil {
		if err := c.ops.Delete(ctx, pv, false, "cleaned"); err != nil {
			return err
		}
	}
	if err := c.releaseJobs(ctx, js); err != nil {
		return err
	}
	c.requestDiscovery(pv.Annotations[jobs.AnnNode])
	return nil
}

// retryCleanup reports a failed attempt once and starts the next one after
// the backoff. The failed Job keeps the lock until its successor exists.
func (c *controller) retryCleanup(ctx context.Context, id string, obj runtime.Object, failed *batchv1.Job, js []*batchv1.Job) error {
	if c.firstSeen(failed.UID) {
		c.observeCleanup(failed, "failed")
		metrics.JobFailures.WithLabelValues(metrics.KindCleanup).Inc()
		c.event(obj, v1.EventTypeWarning, "CleanupFailed", "Cleanup Job %s failed: %s; the volume stays unpublished and is retried",
			failed.Name, c.podMessage(failed))
	}
	cond, _ := jobs.FinishTime(failed)
	next := cond.LastTransitionTime.Add(jobs.Backoff(c.opts.RetryBase, c.opts.RetryMax, jobs.Attempt(failed)))
	if now := c.clock.Now(); now.Before(next) {
		c.queue.AddAfter(volKey(id), next.Sub(now))
		return nil
	}
	if failed.Annotations[jobs.AnnDiskID] == "" {
		return c.retryUnidentified(ctx, obj, failed, js)
	}
	retry := jobs.RetryJob(failed, nextAttempt(js))
	if _, err := c.kube.BatchV1().Jobs(retry.Namespace).Create(ctx, retry, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create cleanup Job %s: %w", retry.Name, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindCleanup).Inc()
	return c.releaseJobs(ctx, js)
}

// retryUnidentified retries a failed Job created before Jobs carried the
// disk's identity, which no retry of it could prove: a Job built afresh from
// the PV carries it. With the PV gone (obj is the Job), nothing can, so the
// failed Job stays as the volume's lock and says so.
func (c *controller) retryUnidentified(ctx context.Context, obj runtime.Object, failed *batchv1.Job, js []*batchv1.Job) error {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		if c.mismatchSeen(failed) {
			c.event(failed, v1.EventTypeWarning, "CleanupRefused", "Cleanup Job %s records no disk identity and its PV is gone, so no retry "+
				"can prove which disk it wipes; the Job stays as the lock of %s: wipe the disk yourself, then remove the Job's %s finalizer",
				failed.Name, failed.Annotations[jobs.AnnHostPath], jobs.FinalizerCleanupLock)
		}
		return nil
	}
	created, err := c.startCleanup(ctx, pv, nextAttempt(js))
	if err != nil || !created {
		return err
	}
	return c.releaseJobs(ctx, js)
}

func (c *controller) observeCleanup(job *batchv1.Job, result string) {
	if result == "succeeded" && !c.firstSeen(job.UID) {
		return
	}
	cond, _ := jobs.FinishTime(job)
	mode := string(v1.PersistentVolumeFilesystem)
	if job.Annotations[jobs.AnnKind] == string(report.KindBlock) {
		mode = string(v1.PersistentVolumeBlock)
	}
	metrics.CleanupDuration.WithLabelValues(mode, result).Observe(cond.LastTransitionTime.Sub(job.CreationTimestamp.Time).Seconds())
}

// releaseJobs removes the lock finalizer of Jobs and deletes them.
func (c *controller) releaseJobs(ctx context.Context, js []*batchv1.Job) error {
	var errs []error
	for _, j := range js {
		if slices.Contains(j.Finalizers, jobs.FinalizerCleanupLock) {
			cp := j.DeepCopy()
			cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == jobs.FinalizerCleanupLock })
			if _, err := c.kube.BatchV1().Jobs(j.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("failed to release Job %s: %w", j.Name, err))
				continue
			}
		}
		if j.DeletionTimestamp == nil {
			errs = append(errs, jobs.Delete(ctx, c.kube.BatchV1(), j))
		}
	}
	return aggregate(errs)
}

func aggregate(errs []error) error {
	return errors.Join(errs...)
}
