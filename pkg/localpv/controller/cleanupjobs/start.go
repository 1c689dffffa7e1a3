package cleanupjobs

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
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// cleanupTarget checks a PV before its disk is wiped: its class must still be
// configured, its path must be a direct child of the class's host
// directory, so a forged PV cannot point a wipe elsewhere, and it must have
// recorded its disk's identity, which the Job checks on the node together
// with the recorded machine.
func (r *runner) cleanupTarget(pv *v1.PersistentVolume) (jobs.CleanupTarget, error) {
	class, path := pv.Annotations[jobs.AnnClass], pv.Annotations[jobs.AnnHostPath]
	mc, ok := r.Provisioner.StorageClassMap[class]
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
		return "", fmt.Errorf("the disk's identity was never recorded (no %s annotation), so no cleanup can prove it wipes this PV's "+
			"disk; check the disk at its path, then set %s=%s on the PV to have that disk recorded and wiped, or wipe it yourself "+
			"and delete the PV", jobs.AnnDiskID, jobs.AnnAdminAction, jobs.AdminActionWipe)
	}
	if err := disk.Valid(); err != nil {
		return "", fmt.Errorf("annotation %s: %w", jobs.AnnDiskID, err)
	}
	return disk, nil
}

// startCleanup creates the cleanup Job of a PV's attempt, and reports
// whether one exists now. A PV that cannot be wiped gets a CleanupRefused
// Event and no Job.
func (r *runner) startCleanup(ctx context.Context, pv *v1.PersistentVolume, attempt int) (bool, error) {
	t, err := r.cleanupTarget(pv)
	if err != nil && pv.Annotations[jobs.AnnDiskID] == "" && pvstate.AdminAction(pv) == jobs.AdminActionWipe {
		// The admin asked for the wipe: the next report of the node records
		// the disk at the path (publishing), and the PV is synced again.
		r.RequestDiscovery(pv.Annotations[jobs.AnnNode])
		return false, nil
	}
	if err != nil {
		r.Recorder.Eventf(pv, v1.EventTypeWarning, "CleanupRefused", "Volume is not wiped: %v; the PV stays %s", err, pv.Status.Phase)
		return false, nil
	}
	job := jobs.CleanupJob(r.Params, r.Provisioner, t, attempt)
	if key := pv.Annotations[jobs.AnnUnwipedDisk]; key != "" {
		job.Annotations[jobs.AnnUnwipedDisk] = key // a held disk, forgotten once wiped
	}
	if _, err := r.Kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		return false, fmt.Errorf("failed to create cleanup Job for PV %s: %w", pv.Name, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindCleanup).Inc()
	r.Recorder.Eventf(pv, v1.EventTypeNormal, "CleanupStarted", "Cleanup Job %s started (attempt %d)", job.Name, attempt)
	klog.FromContext(ctx).V(2).Info("Created cleanup Job", "pv", pv.Name, "job", klog.KObj(job))
	return true, nil
}

// Ensure creates a cleanup Job for a PV unless one for it exists.
// A PV that cannot be wiped gets a CleanupRefused Event and an error, so
// that it is kept.
func (r *runner) Ensure(ctx context.Context, pv *v1.PersistentVolume) error {
	js, err := r.Volumes.Jobs(pv.Labels[jobs.LabelVolumeID])
	if err != nil {
		return err
	}
	for _, j := range js {
		if j.Annotations[jobs.AnnPVUID] == string(pv.UID) {
			return nil
		}
	}
	_, err = r.cleanupTarget(pv)
	if err == nil && pvstate.Held(pv) && pvstate.AdminAction(pv) != jobs.AdminActionWipe {
		err = fmt.Errorf("its disk is held until an admin sets %s", jobs.AnnAdminAction)
	}
	if err != nil {
		r.Recorder.Eventf(pv, v1.EventTypeWarning, "CleanupRefused", "Volume is not wiped: %v; the PV stays %s", err, pv.Status.Phase)
		return fmt.Errorf("cannot queue cleanup of PV %s: %w", pv.Name, err)
	}
	_, err = r.startCleanup(ctx, pv, jobs.NextAttempt(js))
	return err
}

// finishCleanup deletes a wiped PV, then releases its Jobs so the next
// discovery publishes the clean disk again.
func (r *runner) finishCleanup(ctx context.Context, pv *v1.PersistentVolume, job *batchv1.Job, js []*batchv1.Job) error {
	r.observeCleanup(job, "succeeded")
	if err := r.finishReturnedDisk(ctx, job); err != nil {
		return err
	}
	if err := r.Ops.RemoveFinalizer(ctx, pv); err != nil {
		return err
	}
	if pv.DeletionTimestamp == nil {
		if err := r.Ops.Delete(ctx, pv, false, "cleaned"); err != nil {
			return err
		}
	}
	if err := r.releaseJobs(ctx, js); err != nil {
		return err
	}
	r.RequestDiscovery(pv.Annotations[jobs.AnnNode])
	return nil
}

// retryCleanup reports a failed attempt once and starts the next one after
// the backoff. The failed Job keeps the lock until its successor exists.
func (r *runner) retryCleanup(ctx context.Context, id string, obj runtime.Object, failed *batchv1.Job, js []*batchv1.Job) error {
	if r.firstSeen(failed.UID) {
		r.observeCleanup(failed, "failed")
		metrics.JobFailures.WithLabelValues(metrics.KindCleanup).Inc()
		r.Recorder.Eventf(obj, v1.EventTypeWarning, "CleanupFailed", "Cleanup Job %s failed: %s; the volume stays unpublished and is retried",
			failed.Name, r.podMessage(failed))
	}
	cond, _ := jobs.FinishTime(failed)
	next := cond.LastTransitionTime.Add(r.backoff(jobs.Attempt(failed)))
	if now := r.Clock.Now(); now.Before(next) {
		r.Requeue(id, next.Sub(now))
		return nil
	}
	if failed.Annotations[jobs.AnnDiskID] == "" {
		return r.retryUnidentified(ctx, obj, failed, js)
	}
	retry := jobs.RetryJob(failed, jobs.NextAttempt(js))
	if _, err := r.Kube.BatchV1().Jobs(retry.Namespace).Create(ctx, retry, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create cleanup Job %s: %w", retry.Name, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindCleanup).Inc()
	return r.releaseJobs(ctx, js)
}

// retryUnidentified retries a failed Job created before Jobs carried the
// disk's identity, which no retry of it could prove: a Job built afresh from
// the PV carries it. With the PV gone (obj is the Job), nothing can, so the
// failed Job stays as the volume's lock and says so.
func (r *runner) retryUnidentified(ctx context.Context, obj runtime.Object, failed *batchv1.Job, js []*batchv1.Job) error {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		if r.mismatchSeen(failed) {
			r.Recorder.Eventf(failed, v1.EventTypeWarning, "CleanupRefused", "Cleanup Job %s records no disk identity and its PV is gone, so no retry "+
				"can prove which disk it wipes; the Job stays as the lock of %s on node %s: wipe the disk yourself, then delete the Job",
				failed.Name, failed.Annotations[jobs.AnnHostPath], failed.Annotations[jobs.AnnNode])
		}
		return nil
	}
	created, err := r.startCleanup(ctx, pv, jobs.NextAttempt(js))
	if err != nil || !created {
		return err
	}
	return r.releaseJobs(ctx, js)
}

func (r *runner) observeCleanup(job *batchv1.Job, result string) {
	if result == "succeeded" && !r.firstSeen(job.UID) {
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
func (r *runner) releaseJobs(ctx context.Context, js []*batchv1.Job) error {
	var errs []error
	for _, j := range js {
		if slices.Contains(j.Finalizers, jobs.FinalizerCleanupLock) {
			cp := j.DeepCopy()
			cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == jobs.FinalizerCleanupLock })
			if _, err := r.Kube.BatchV1().Jobs(j.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("failed to release Job %s: %w", j.Name, err))
				continue
			}
		}
		if j.DeletionTimestamp == nil {
			errs = append(errs, jobs.Delete(ctx, r.Kube.BatchV1(), j))
		}
	}
	return errors.Join(errs...)
}
