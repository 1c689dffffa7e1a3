package cleanupjobs

import (
	"context"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// mismatchUnknown is the what of a mismatch whose Job exited with
// jobs.CleanupIdentityMismatchCode without the message that says what.
const mismatchUnknown = "unknown"

// mismatch is the result of a cleanup Job that found another machine or
// another disk than its PV's, and so wiped nothing.
type mismatch struct {
	// what is jobs.CleanupMismatchMachine, jobs.CleanupMismatchDisk or
	// mismatchUnknown.
	what string
	// detail is the Job's message after the prefix: "<what>: recorded X,
	// found Y".
	detail string
}

// cleanupMismatch reports whether a failed cleanup Job's pod ended with an
// identity mismatch: its termination message starts with
// jobs.CleanupIdentityMismatch, or it exited with
// jobs.CleanupIdentityMismatchCode.
func (r *runner) cleanupMismatch(job *batchv1.Job) (mismatch, bool) {
	pods, err := r.jobPods(job)
	if err != nil {
		return mismatch{}, false
	}
	for _, pod := range pods {
		if !jobs.OwnedBy(pod, job) {
			continue
		}
		for _, s := range pod.Status.ContainerStatuses {
			t := s.State.Terminated
			switch {
			case t == nil:
			case strings.HasPrefix(t.Message, jobs.CleanupIdentityMismatch):
				detail := strings.TrimSpace(strings.TrimPrefix(t.Message, jobs.CleanupIdentityMismatch))
				what, _, _ := strings.Cut(detail, ":")
				if what != jobs.CleanupMismatchMachine && what != jobs.CleanupMismatchDisk {
					what = mismatchUnknown
				}
				return mismatch{what: what, detail: pvops.Truncate(detail, 512)}, true
			case t.ExitCode == jobs.CleanupIdentityMismatchCode:
				return mismatch{what: mismatchUnknown, detail: "the Job exited with the identity-mismatch code and no message"}, true
			}
		}
	}
	return mismatch{}, false
}

// differed names what a mismatch found, for Events.
func (m mismatch) differed() string {
	switch m.what {
	case jobs.CleanupMismatchMachine:
		return "another machine under the node's name"
	case jobs.CleanupMismatchDisk:
		return "another disk at the volume's path"
	}
	return "another machine or disk"
}

// mismatchSeen reports whether a Job's mismatch is handled for the first
// time; it is remembered apart from the Job's other results, since a
// CleanupFailed Event may have been given before the pod's message arrived.
func (r *runner) mismatchSeen(job *batchv1.Job) bool {
	return r.firstSeen(mismatchKey(job.UID))
}

func mismatchKey(uid types.UID) types.UID { return uid + "/identity-mismatch" }

// noteMismatch counts a mismatch and warns on obj (the PV, or the Job of a
// PV that is gone), once per Job.
func (r *runner) noteMismatch(obj runtime.Object, job *batchv1.Job, m mismatch, outcome string) {
	if !r.mismatchSeen(job) {
		return
	}
	r.observeCleanup(job, "identity_mismatch")
	metrics.CleanupIdentityMismatches.WithLabelValues(m.what).Inc()
	r.Recorder.Eventf(obj, v1.EventTypeWarning, "CleanupIdentityMismatch",
		"Cleanup Job %s found %s on node %s (%s): nothing was wiped; %s",
		job.Name, m.differed(), job.Annotations[jobs.AnnNode], m.detail, outcome)
}

// dropMismatchedPV deletes a PV whose cleanup found another machine or disk,
// without a wipe: its disk is not where the Job looked, and wiping what is
// there would destroy someone else's data. The Jobs are released and the
// node is discovered again, so whatever the path leads to now is judged
// afresh.
func (r *runner) dropMismatchedPV(ctx context.Context, pv *v1.PersistentVolume, job *batchv1.Job, js []*batchv1.Job, m mismatch) error {
	r.noteMismatch(pv, job, m, "the PV is deleted without a wipe")
	if err := r.Unwiped.Remember(ctx, pv, "cleanup found another "+m.what); err != nil {
		return err
	}
	if err := r.Ops.RemoveFinalizer(ctx, pv); err != nil {
		return err
	}
	if pv.DeletionTimestamp == nil {
		if err := r.Ops.Delete(ctx, pv, false, "identity_mismatch"); err != nil {
			return err
		}
	}
	if err := r.releaseJobs(ctx, js); err != nil {
		return err
	}
	r.RequestDiscovery(pv.Annotations[jobs.AnnNode])
	return nil
}

// machineMismatch handles a cleanup Job that ran on another machine than
// its PV's. The PV is not dropped: the node may have been re-imaged with
// the PV's disk kept, and a dropped PV's disk would be published again with
// the tenant's data. When the Node reports another machine than the PV
// records, the Jobs are released and the PV is left to the replaced-machine
// rules (what its path leads to decides: the same disk hands it over and
// wipes it, another disk drops it). When the Node reports the PV's machine,
// the Job read another machine ID than the kubelet did (its /etc/machine-id
// is not the one the kubelet reads): the cleanup is retried with backoff,
// and the Event names both.
func (r *runner) machineMismatch(ctx context.Context, id string, pv *v1.PersistentVolume, job *batchv1.Job,
	js []*batchv1.Job, m mismatch) error {
	node, err := r.Nodes.Get(pv.Annotations[jobs.AnnNode])
	if err == nil && !machine.Recorded(pv).Differs(machine.Of(node)) {
		r.noteMismatch(pv, job, m, "the Node reports the PV's machine ("+machine.Of(node).String()+
			"), so the Job's /etc/machine-id is not the one the kubelet reads; the cleanup is retried")
		return r.retryCleanup(ctx, id, pv, job, js)
	}
	r.noteMismatch(pv, job, m, "the PV is kept until discovery shows whether its disk is still at its path")
	if err := r.releaseJobs(ctx, js); err != nil {
		return err
	}
	r.RequestDiscovery(pv.Annotations[jobs.AnnNode])
	return nil
}

// releaseMismatchedOrphan lets go of the cleanup Jobs of a PV that is gone
// when the latest found another machine or disk: a retry would find the
// same, and must never wipe what is there now.
func (r *runner) releaseMismatchedOrphan(ctx context.Context, job *batchv1.Job, js []*batchv1.Job, m mismatch) error {
	r.noteMismatch(job, job, m, "the PV is gone, so the cleanup is not retried")
	if err := r.releaseJobs(ctx, js); err != nil {
		return err
	}
	r.RequestDiscovery(job.Annotations[jobs.AnnNode])
	return nil
}
