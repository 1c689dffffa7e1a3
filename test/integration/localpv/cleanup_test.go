package localpv

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// TestCleanupDeletesPVOnlyAfterJobSucceeded: a Released PV with reclaim
// policy Delete gets a cleanup Job pinned to its node; the PV stays while
// the Job runs, is deleted once it succeeded, and the clean disk is then
// published again as a new PV.
func TestCleanupDeletesPVOnlyAfterJobSucceeded(t *testing.T) {
	e, sim := newMasterEnv(t)
	sim.setDisks("node-a", disks("node-a", "vol1"))
	sim.setCleanup(func(int) outcome { return hold })
	e.createNode(t, "node-a")
	e.startMaster(t, time.Second)
	name := pvName("node-a", "vol1")
	pv := e.waitForPV(t, name, "")

	e.releasePV(t, name)
	jobName := cleanupJobName("node-a", "vol1", 1)
	e.waitForEvent(t, "PersistentVolume", name, "CleanupStarted", jobName)
	job, err := e.cp.Client.BatchV1().Jobs(namespace).Get(t.Context(), jobName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pinnedNode(job) != "node-a" || len(job.Finalizers) != 0 || job.Annotations[jobs.AnnPVUID] != string(pv.UID) {
		t.Fatalf("cleanup Job not pinned to node-a, without finalizers and tied to the PV: %+v", job.ObjectMeta)
	}
	got, err := e.cp.Client.CoreV1().PersistentVolumes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || got.UID != pv.UID {
		t.Fatalf("PV deleted before its cleanup ran: %v", err)
	}

	sim.finish(t, jobName, true)
	waitForGone(t, "wiped PV", pv.UID, e.pvGetter(name))
	waitForGone(t, "cleanup Job", job.UID, e.jobGetter(jobName))
	fresh := e.waitForPV(t, name, pv.UID)
	if fresh.Spec.ClaimRef != nil {
		t.Errorf("republished PV carries the old claim")
	}
}

// TestNoPVWhileCleanupUnfinishedAcrossRestarts: the volume of a cleanup Job
// that is pending, then failed, gets no PV from any master, however often
// discovery reports the disk, across master restarts that rebuild their
// state from Jobs and PVs alone. Once a retry succeeds, the disk is
// published again.
func TestNoPVWhileCleanupUnfinishedAcrossRestarts(t *testing.T) {
	e, sim := newMasterEnv(t)
	sim.setDisks("node-a", disks("node-a", "vol1", "vol2"))
	attempts := map[int]outcome{1: hold, 2: succeed}
	sim.setCleanup(func(a int) outcome { return attempts[a] })
	e.createNode(t, "node-a")
	stop := e.startMaster(t, time.Minute)
	name := pvName("node-a", "vol1")
	pv := e.waitForPV(t, name, "")
	e.waitForPV(t, pvName("node-a", "vol2"), "")
	seen := sim.waitForDiscovery(t, "node-a", 0)

	e.releasePV(t, name)
	first := cleanupJobName("node-a", "vol1", 1)
	e.waitForEvent(t, "PersistentVolume", name, "CleanupStarted", first)
	stop()
	// While no master runs, an operator forces the PV away: nothing but the
	// pending Job now says that the disk is dirty.
	e.forceDeletePV(t, name)
	waitForGone(t, "forced PV", pv.UID, e.pvGetter(name))

	// Pending: a new master discovers the node at start and must not
	// publish vol1.
	stop = e.startMaster(t, time.Minute)
	seen = sim.waitForDiscovery(t, "node-a", seen)
	e.requireNoPV(t, name, "cleanup pending")

	// Failed: the failure is reported, the retry waits for its backoff (a
	// minute), and neither this master nor the next publishes vol1.
	sim.finish(t, first, false)
	e.waitForEvent(t, "Job", first, "CleanupFailed", "device or resource busy")
	e.notify(t, "node-a")
	seen = sim.waitForDiscovery(t, "node-a", seen)
	e.requireNoPV(t, name, "cleanup failed")
	stop()
	stop = e.startMaster(t, time.Minute)
	sim.waitForDiscovery(t, "node-a", seen)
	e.requireNoPV(t, name, "cleanup failed, after a restart")
	if _, err := e.cp.Client.BatchV1().Jobs(namespace).Get(t.Context(), first, metav1.GetOptions{}); err != nil {
		t.Fatalf("the failed cleanup Job lost its lock: %v", err)
	}
	stop()

	// A master with a short backoff retries at once; attempt 2 succeeds,
	// the locks are released and the clean disk is published again.
	e.startMaster(t, 100*time.Millisecond)
	fresh := e.waitForPV(t, name, pv.UID)
	if fresh.Spec.ClaimRef != nil {
		t.Errorf("republished PV carries the old claim")
	}
	for _, j := range []string{first, cleanupJobName("node-a", "vol1", 2)} {
		waitForGone(t, "cleanup Job "+j, "", e.jobGetter(j))
	}
}

// forceDeletePV removes the master's finalizer and deletes the PV.
func (e *env) forceDeletePV(t *testing.T, name string) {
	t.Helper()
	pvs := e.cp.Client.CoreV1().PersistentVolumes()
	pv, err := pvs.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Finalizers = nil
	if _, err := pvs.Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pvs.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// requireNoPV fails if the volume has a PV. Call it after waitForDiscovery:
// the master has then acted on a report that lists the volume.
func (e *env) requireNoPV(t *testing.T, name, state string) {
	t.Helper()
	if e.pvExists(t, name) {
		t.Fatalf("PV %s was published while its %s", name, state)
	}
}
