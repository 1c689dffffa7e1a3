package cleanupjobs

import (
	"context"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

// Runner drives volumes' cleanups. It is safe for concurrent use.
type Runner interface {
	// Sync drives the cleanup of one volume: it starts, retries or
	// finishes its cleanup Jobs and deletes or lets go of its PV. An error
	// means the volume is to be synced again.
	Sync(ctx context.Context, id string) error
	// Ensure creates a cleanup Job for a PV unless one for it exists. A PV
	// that cannot be wiped gets a CleanupRefused Event and an error, so
	// that it is kept.
	Ensure(ctx context.Context, pv *v1.PersistentVolume) error
	// ForgetJob drops what is remembered of a deleted Job.
	ForgetJob(uid types.UID)
}

// Volumes finds a volume's PV and cleanup Jobs in the master's caches.
type Volumes interface {
	// PV returns the master's PV of a volume, or nil.
	PV(id string) (*v1.PersistentVolume, error)
	// Jobs returns a volume's cleanup Jobs, oldest attempt first.
	Jobs(id string) ([]*batchv1.Job, error)
}

// Config is what a Runner reads, writes and tells.
type Config struct {
	// Provisioner is the parsed ConfigMap.
	Provisioner *config.Configuration
	Params      jobs.Params
	// Kube reads and writes PVs and the master's Jobs.
	Kube    kubernetes.Interface
	Volumes Volumes
	Nodes   corelisters.NodeLister
	Pods    jobs.JobPods
	Ops     pvops.Interface
	// Marks writes the marks of the master's PVs.
	Marks   pvstate.Writer
	Unwiped unwiped.Store
	// Recorder and Clock; RetryBase and RetryMax bound the backoff of
	// failed attempts.
	Recorder            record.EventRecorder
	Clock               clock.PassiveClock
	RetryBase, RetryMax time.Duration
	// RequestDiscovery asks for a discovery run on a node, once a volume
	// is released.
	RequestDiscovery func(node string)
	// Requeue asks for the volume to be synced again after a delay.
	Requeue func(id string, after time.Duration)
}

type runner struct {
	Config

	mu sync.Mutex
	// seenJobs holds finished Jobs whose result was already counted in
	// metrics and events.
	seenJobs map[string]bool
}

var _ Runner = &runner{}

// New returns a Runner.
func New(cfg Config) Runner {
	return &runner{Config: cfg, seenJobs: map[string]bool{}}
}

func (r *runner) backoff(n int) time.Duration { return jobs.Backoff(r.RetryBase, r.RetryMax, n) }

// firstSeen reports whether a finished Job's result is seen for the first
// time, and remembers it.
func (r *runner) firstSeen(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seenJobs[string(uid)] {
		return false
	}
	r.seenJobs[string(uid)] = true
	return true
}

func (r *runner) ForgetJob(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seenJobs, string(uid))
	delete(r.seenJobs, string(mismatchKey(uid)))
	delete(r.seenJobs, string(orphanKey(uid)))
}

// seen reports whether a key was marked; mark marks it.
func (r *runner) seen(key types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seenJobs[string(key)]
}

func (r *runner) mark(key types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seenJobs[string(key)] = true
}

func orphanKey(uid types.UID) types.UID { return uid + "/orphan" }

// rememberOrphan records the disk of a cleanup Job whose PV is gone (its
// finalizer removed by hand and the PV deleted, or dropped while its node
// was gone) as unwiped, once per Job and master, before the master does
// anything else with the Job: whatever then ends the Job short of a
// succeeded wipe (an admin, the deletion of the namespace) leaves the disk
// remembered, and held when it is seen again. A succeeded wipe forgets it
// (finishReturnedDisk). A Job without a disk identity cannot be
// remembered; it stays the lock of its path.
func (r *runner) rememberOrphan(ctx context.Context, job *batchv1.Job) error {
	disk := identity.ID(job.Annotations[jobs.AnnDiskID])
	if disk == "" || disk.Valid() != nil || r.seen(orphanKey(job.UID)) {
		return nil
	}
	// What the memory records of a PV, from the Job that carries it; a
	// cleanup Job is only ever made for a PV a claim released.
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: job.Annotations[jobs.AnnPVName], Annotations: map[string]string{
			jobs.AnnDiskID: string(disk), jobs.AnnNode: job.Annotations[jobs.AnnNode], jobs.AnnHostPath: job.Annotations[jobs.AnnHostPath]}},
		Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{}},
	}
	if err := r.Unwiped.Remember(ctx, pv, "PV deleted before cleanup Job "+job.Name+" wiped its disk"); err != nil {
		return err
	}
	r.mark(orphanKey(job.UID))
	return nil
}

// jobPods returns the pods of a Job from the cache.
func (r *runner) jobPods(job *batchv1.Job) ([]*v1.Pod, error) {
	return r.Pods.Of(job)
}

// podMessage says why a Job failed, for Events: the first termination
// message of its failed pods, or its Failed condition and what its pod
// waited for (a Job past its deadline whose pod never ran).
func (r *runner) podMessage(job *batchv1.Job) string {
	pods, err := r.jobPods(job)
	if err != nil {
		return ""
	}
	return pvops.Truncate(jobs.JobFailureMessage(job, pods), 512)
}

// replacedPV reports whether a PV's machine no longer runs under its node's
// name, from its mark or from the node in the cache.
func (r *runner) replacedPV(pv *v1.PersistentVolume) bool {
	if machine.Marked(pv) {
		return true
	}
	node, err := r.Nodes.Get(pv.Annotations[jobs.AnnNode])
	return err == nil && machine.Recorded(pv).Differs(machine.Of(node))
}

// finishReturnedDisk forgets the unwiped disk a succeeded Job of a gone PV
// wiped: the one it was made for, and the disk it checked on its node (a
// Job queued before its PV was dropped, say for a deleted node).
func (r *runner) finishReturnedDisk(ctx context.Context, job *batchv1.Job) error {
	if key := job.Annotations[jobs.AnnUnwipedDisk]; key != "" {
		if err := r.Unwiped.Forget(ctx, key); err != nil {
			return err
		}
	}
	id := identity.ID(job.Annotations[jobs.AnnDiskID])
	if id == "" || id.Valid() != nil {
		return nil
	}
	key := unwiped.Key(job.Annotations[jobs.AnnNode], job.Annotations[jobs.AnnHostPath], id)
	if key == job.Annotations[jobs.AnnUnwipedDisk] {
		return nil
	}
	return r.Unwiped.Forget(ctx, key)
}
