package cleanupjobs_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

func TestStart(t *testing.T) {
	retain := releasedPV()
	retain.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	noDisk := releasedPV()
	delete(noDisk.Annotations, jobs.AnnDiskID)
	forged := releasedPV()
	forged.Annotations[jobs.AnnHostPath], forged.Spec.Local.Path = "/etc", "/etc"
	bound := releasedPV()
	bound.Status.Phase = v1.VolumeBound
	tests := []struct {
		name      string
		objs      []runtime.Object
		wantJob   bool
		wantEvent string
	}{
		{name: "a released Delete PV gets a cleanup Job", objs: []runtime.Object{releasedPV(), machineNode("m1")},
			wantJob: true, wantEvent: "CleanupStarted"},
		{name: "a released Retain PV gets none", objs: []runtime.Object{retain, machineNode("m1")}},
		{name: "a bound PV gets none", objs: []runtime.Object{bound, machineNode("m1")}},
		{name: "a PV without its disk's identity is refused", objs: []runtime.Object{noDisk, machineNode("m1")},
			wantEvent: "CleanupRefused Volume is not wiped: the disk's identity was never recorded"},
		{name: "a PV whose path is not in its class's directory is refused", objs: []runtime.Object{forged, machineNode("m1")},
			wantEvent: "CleanupRefused"},
		{name: "a PV of a replaced machine waits for discovery", objs: []runtime.Object{releasedPV(), machineNode("m2")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.objs...)
			h.sync()
			got := h.jobNames()
			if (len(got) == 1) != tc.wantJob {
				t.Fatalf("cleanup Jobs %v, want one: %t", got, tc.wantJob)
			}
			if tc.wantJob {
				args := strings.Join(mustJob(t, h, got[0]).Spec.Template.Spec.Containers[0].Args, " ")
				for _, want := range []string{"--machine-id=m1", "--system-uuid=u1", "--disk-id=" + string(disk)} {
					if !strings.Contains(args, want) {
						t.Errorf("the Job's arguments %q lack %s", args, want)
					}
				}
			}
			if evs := h.events(); tc.wantEvent != "" && !strings.Contains(evs, tc.wantEvent) || tc.wantEvent == "" && evs != "" {
				t.Errorf("Events %q, want %q", evs, tc.wantEvent)
			}
		})
	}
}

func mustJob(t *testing.T, h *harness, name string) *batchv1.Job {
	t.Helper()
	j, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestFinish covers what a finished Job of the PV does.
func TestFinish(t *testing.T) {
	tests := []struct {
		name string
		code int32
		msg  string
		// wantOps are the PV writes.
		wantOps       []string
		wantJobs      int
		wantDiscovery bool
		wantRequeue   time.Duration
		wantEvent     string
		wantUnwiped   bool
	}{
		{name: "a wiped disk's PV is deleted and the volume released",
			wantOps: []string{"removeFinalizer local-pv-" + volID, "delete local-pv-" + volID + " exact=false reason=cleaned"}, wantDiscovery: true},
		{name: "a failed attempt is reported and retried after the backoff", code: 1, msg: "disk busy",
			wantJobs: 1, wantRequeue: 10 * time.Second, wantEvent: "CleanupFailed Cleanup Job"},
		{name: "another disk at the path drops the PV without a wipe", code: jobs.CleanupIdentityMismatchCode,
			msg:           jobs.CleanupIdentityMismatch + "disk: recorded X, found Y",
			wantOps:       []string{"removeFinalizer local-pv-" + volID, "delete local-pv-" + volID + " exact=false reason=identity_mismatch"},
			wantDiscovery: true, wantEvent: "CleanupIdentityMismatch", wantUnwiped: true},
		{name: "another machine with the Node's machine unchanged is retried", code: jobs.CleanupIdentityMismatchCode,
			msg:      jobs.CleanupIdentityMismatch + "machine: recorded machine ID m1, found machine ID m9",
			wantJobs: 1, wantRequeue: 10 * time.Second, wantEvent: "so the Job's /etc/machine-id is not the one the kubelet reads"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, releasedPV(), machineNode("m1"))
			h.sync()
			h.events()
			h.finish(tc.code, tc.msg)
			h.sync()
			if got := h.ops.Calls(); !slices.Equal(got, tc.wantOps) {
				t.Errorf("PV writes %q, want %q", got, tc.wantOps)
			}
			if got := h.jobNames(); len(got) != tc.wantJobs {
				t.Errorf("cleanup Jobs left %v, want %d", got, tc.wantJobs)
			}
			if (len(h.discovered) > 0) != tc.wantDiscovery {
				t.Errorf("discovery asked for %v, want %t", h.discovered, tc.wantDiscovery)
			}
			if h.requeued[volID] != tc.wantRequeue {
				t.Errorf("requeued after %v, want %v", h.requeued[volID], tc.wantRequeue)
			}
			if evs := h.events(); tc.wantEvent != "" && !strings.Contains(evs, tc.wantEvent) {
				t.Errorf("Events %q, want %q", evs, tc.wantEvent)
			}
			disks, err := h.memory().Load(h.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if (len(disks) > 0) != tc.wantUnwiped {
				t.Errorf("unwiped disks %v, want some: %t", disks, tc.wantUnwiped)
			}
		})
	}
}

// TestRetryAfterBackoff: the next attempt is a new Job, and the failed one
// keeps the lock until it exists.
func TestRetryAfterBackoff(t *testing.T) {
	h := newHarness(t, releasedPV(), machineNode("m1"))
	h.sync()
	h.finish(1, "disk busy")
	h.sync()
	h.clock.Step(10 * time.Second)
	h.sync()
	got := h.jobNames()
	if len(got) != 1 || !strings.HasSuffix(got[0], "-2") {
		t.Errorf("cleanup Jobs %v, want only attempt 2", got)
	}
}

// TestOrphan: a Job whose PV is gone keeps wiping until it succeeds, then
// releases the volume.
func TestOrphan(t *testing.T) {
	h := newHarness(t, releasedPV(), machineNode("m1"))
	h.sync()
	if err := h.kube.CoreV1().PersistentVolumes().Delete(h.ctx, "local-pv-"+volID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.finish(0, "")
	h.sync()
	if got := h.jobNames(); len(got) != 0 || !slices.Equal(h.discovered, []string{"a"}) {
		t.Errorf("Jobs %v and discovery %v, want the volume released and node a discovered", got, h.discovered)
	}
}

// TestNodeGone: a released PV whose node was deleted and did not come back
// is deleted without a wipe; one whose node is back on its machine loses
// the mark and is wiped as usual.
func TestNodeGone(t *testing.T) {
	gone := releasedPV()
	gone.Annotations[jobs.AnnNodeGone] = "2026-01-01T00:00:00Z"
	tests := []struct {
		name    string
		objs    []runtime.Object
		wantOps []string
		wantPV  bool
	}{
		{name: "no node: dropped without a wipe", objs: []runtime.Object{gone},
			wantOps: []string{"removeFinalizer local-pv-" + volID, "delete local-pv-" + volID + " exact=false reason=node_deleted"}},
		{name: "back on another machine: dropped", objs: []runtime.Object{gone, machineNode("m2")},
			wantOps: []string{"removeFinalizer local-pv-" + volID, "delete local-pv-" + volID + " exact=false reason=node_deleted"}},
		{name: "back on its machine: unmarked", objs: []runtime.Object{gone, machineNode("m1")}, wantPV: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.objs...)
			h.sync()
			if got := h.ops.Calls(); !slices.Equal(got, tc.wantOps) {
				t.Errorf("PV writes %q, want %q", got, tc.wantOps)
			}
			if len(h.jobNames()) != 0 {
				t.Errorf("a node-gone PV got a cleanup Job: %v", h.jobNames())
			}
			pv, _ := h.PV(volID)
			if _, marked := pv.Annotations[jobs.AnnNodeGone]; marked == tc.wantPV {
				t.Errorf("node-gone mark kept = %t, want %t", marked, !tc.wantPV)
			}
		})
	}
}

func TestEnsure(t *testing.T) {
	h := newHarness(t, releasedPV(), machineNode("m1"))
	pv, _ := h.PV(volID)
	for range 2 {
		if err := h.r.Ensure(h.ctx, pv); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.jobNames(); len(got) != 1 {
		t.Errorf("cleanup Jobs %v, want one", got)
	}
	delete(pv.Annotations, jobs.AnnDiskID)
	pv.UID = "other"
	if err := h.r.Ensure(h.ctx, pv); err == nil || !strings.Contains(err.Error(), "cannot queue cleanup") {
		t.Errorf("Ensure of a PV without identity = %v, want an error", err)
	}
	if !pvops.Cleanable(pv) {
		t.Error("a released Delete PV is not cleanable")
	}
}

// TestCleanupPastDeadlineIsReported (review H1): a cleanup Job whose pod
// never ran (a host path it could not mount kept it Pending) fails at its
// activeDeadlineSeconds, and the CleanupFailed Event says so instead of
// "no termination message"; the next attempt follows the backoff.
func TestCleanupPastDeadlineIsReported(t *testing.T) {
	h := newHarness(t, releasedPV(), machineNode("m1"))
	h.sync()
	h.events()
	js, _ := h.Jobs(volID)
	j := js[0]
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailed, Status: v1.ConditionTrue,
		Reason: batchv1.JobReasonDeadlineExceeded, Message: "Job was active longer than specified deadline",
		LastTransitionTime: metav1.NewTime(h.clock.Now())})
	if _, err := h.kube.BatchV1().Jobs(ns).UpdateStatus(h.ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = h.pods.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-pod", Namespace: ns, Labels: map[string]string{batchv1.JobNameLabel: j.Name}},
		Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "cleanup",
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}})
	h.sync()
	evs := h.events()
	for _, want := range []string{"CleanupFailed", batchv1.JobReasonDeadlineExceeded, "ContainerCreating"} {
		if !strings.Contains(evs, want) {
			t.Errorf("Events %q lack %q", evs, want)
		}
	}
	if h.requeued[volID] != 10*time.Second {
		t.Errorf("requeued after %v, want the backoff", h.requeued[volID])
	}
}
