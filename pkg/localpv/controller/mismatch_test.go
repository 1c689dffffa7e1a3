package controller

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// pathDiskID is the disk identity the fixture's reports give a volume of
// class fast on node a at hostPath.
func pathDiskID(hostPath string) identity.ID { return testDiskID("a", "fast", filepath.Base(hostPath)) }

// forgetDiskID removes the recorded identity of a PV, as on a PV
// published before identities were recorded whose disk never came back.
func (f *fixture) forgetDiskID(name string) {
	f.t.Helper()
	pv := f.pv(name)
	delete(pv.Annotations, jobs.AnnDiskID)
	if _, err := f.kube.CoreV1().PersistentVolumes().Update(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// releasedOnMachine returns a fixture with node a on machine m1/u1 and its
// released vol1, whose disk identity is recorded when withDiskID.
func releasedOnMachine(t *testing.T, extra map[string]string, withDiskID bool) (*fixture, *v1.PersistentVolume) {
	t.Helper()
	f := newFixture(t, extra, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete),
		newClass("blk", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	name := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	if f.pv(name) == nil {
		t.Fatal("setup: vol1 not published")
	}
	if !withDiskID {
		f.forgetDiskID(name)
	}
	f.setPhase(name, v1.VolumeReleased, true)
	f.events()
	return f, f.pv(name)
}

// failCleanup ends a cleanup Job as failed, its container with the exit
// code and termination message.
func (f *fixture) failCleanup(job string, code int32, msg string) {
	f.t.Helper()
	j := f.job(job)
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailed, Status: v1.ConditionTrue,
		Reason: "BackoffLimitExceeded", LastTransitionTime: metav1.NewTime(f.clock.Now())})
	if _, err := f.kube.BatchV1().Jobs(testNS).UpdateStatus(f.t.Context(), j, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.finishPodWith(job, false, func(p *v1.Pod) {
		p.Status.ContainerStatuses[0].State.Terminated.ExitCode = code
	}, msg)
}

func TestCleanupJobCarriesPVIdentity(t *testing.T) {
	f, pv := releasedOnMachine(t, nil, true)
	id := pv.Labels[jobs.LabelVolumeID]
	f.sync(volKey(id))
	j := f.job(naming.CleanupJobName(id, 1))
	if j == nil {
		t.Fatalf("no cleanup Job; Jobs %v", f.jobNames(jobs.RoleCleanup))
	}
	args := j.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--machine-id=m1", "--system-uuid=u1", "--disk-id=" + string(pathDiskID(vol1))} {
		if !slices.Contains(args, want) {
			t.Errorf("cleanup args %v lack %s", args, want)
		}
	}
	if j.Annotations[jobs.AnnDiskID] != string(pathDiskID(vol1)) || j.Annotations[jobs.AnnMachineID] != "m1" {
		t.Errorf("cleanup Job annotations %v lack the identity", j.Annotations)
	}
}

// TestCleanupIdentityMismatch: a cleanup Job that found another machine or
// disk wiped nothing; the master deletes the PV without a wipe, releases the
// Jobs, never retries, warns, counts, and discovers the node again. An
// ordinary failure is still retried.
func TestCleanupIdentityMismatch(t *testing.T) {
	tests := []struct {
		name     string
		code     int32
		msg      string
		wantWhat string // "" for an ordinary failure
	}{
		{name: "disk", code: 3, msg: jobs.CleanupIdentityMismatch + "disk: recorded wwn:naa.1, found wwn:naa.2", wantWhat: "disk"},
		{name: "message without exit code", code: 1, msg: jobs.CleanupIdentityMismatch + "disk: recorded a, found b", wantWhat: "disk"},
		{name: "exit code without message", code: 3, wantWhat: "unknown"},
		{name: "ordinary failure", code: 1, msg: "cleanup failed: refusing to clean /mnt/fast/vol1: not a mount point"},
		{name: "mismatch text inside an ordinary failure", code: 1, msg: "cleanup failed: " + jobs.CleanupIdentityMismatch + "disk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, pv := releasedOnMachine(t, nil, true)
			id := pv.Labels[jobs.LabelVolumeID]
			f.sync(volKey(id))
			before := counterValue(t, metrics.CleanupIdentityMismatches.WithLabelValues(tc.wantWhat))
			deleted := counterValue(t, metrics.PVsDeleted.WithLabelValues("identity_mismatch"))
			f.failCleanup(naming.CleanupJobName(id, 1), tc.code, tc.msg)
			f.sync(volKey(id))
			f.clock.Step(time.Hour)
			f.sync(volKey(id))
			if tc.wantWhat == "" {
				if f.pv(pv.Name) == nil || f.job(naming.CleanupJobName(id, 2)) == nil {
					t.Fatal("an ordinary failure must keep the PV and be retried")
				}
				f.wantEvent("CleanupFailed")
				return
			}
			if f.pv(pv.Name) != nil {
				t.Fatal("PV kept after an identity mismatch")
			}
			if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
				t.Fatalf("cleanup Jobs not released, or retried: %v", got)
			}
			if counterValue(t, metrics.CleanupIdentityMismatches.WithLabelValues(tc.wantWhat))-before != 1 ||
				counterValue(t, metrics.PVsDeleted.WithLabelValues("identity_mismatch"))-deleted != 1 {
				t.Error("mismatch or deletion not counted once")
			}
			evs := strings.Join(f.events(), "\n")
			if !strings.Contains(evs, "CleanupIdentityMismatch") || !strings.Contains(evs, "nothing was wiped") ||
				(tc.msg != "" && !strings.Contains(evs, strings.TrimPrefix(tc.msg, jobs.CleanupIdentityMismatch))) {
				t.Errorf("Events %q do not say what differed and that nothing was wiped", evs)
			}
			if strings.Contains(evs, "CleanupFailed") {
				t.Errorf("a mismatch was reported as a failure: %q", evs)
			}
			f.sync(nodeKey("a"))
			if f.job(naming.DiscoveryJobName("a")) == nil {
				t.Error("no discovery of the node after the mismatch")
			}
		})
	}
}

// TestCleanupMachineMismatch: a cleanup Job that ran on another machine
// never drops its PV (the node may have been re-imaged with the disk kept).
// When the Node reports another machine too, the PV waits for discovery,
// which hands the same disk to the new machine and wipes it then; when the
// Node reports the PV's machine, the Job's view of the machine is wrong and
// the cleanup is retried.
func TestCleanupMachineMismatch(t *testing.T) {
	msg := jobs.CleanupIdentityMismatch + "machine: recorded machine ID m1, found machine ID m2"
	t.Run("the node reports the PV's machine: retried", func(t *testing.T) {
		f, pv := releasedOnMachine(t, nil, true)
		id := pv.Labels[jobs.LabelVolumeID]
		f.sync(volKey(id))
		f.failCleanup(naming.CleanupJobName(id, 1), 3, msg)
		f.sync(volKey(id))
		f.clock.Step(time.Hour)
		f.sync(volKey(id))
		if f.pv(pv.Name) == nil || f.job(naming.CleanupJobName(id, 2)) == nil {
			t.Fatal("the PV must be kept and its cleanup retried")
		}
		f.wantEvent("is not the one the kubelet reads")
	})
	t.Run("re-imaged with the disk kept: handed over, then wiped", func(t *testing.T) {
		f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
		f.discover("a", dirReport("a", "vol1", diskA))
		oldID := naming.MachineVolumeID("a", vol1, "m1", "u1")
		name := naming.PVNameForID(oldID)
		f.setPhase(name, v1.VolumeReleased, true)
		f.sync(volKey(oldID))
		f.setMachine("a", "m2", "u2")
		f.failCleanup(naming.CleanupJobName(oldID, 1), 3, msg)
		f.sync(volKey(oldID))
		if f.pv(name) == nil {
			t.Fatal("the PV of a machine mismatch was dropped")
		}
		if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
			t.Fatalf("cleanup retried under the new machine before discovery: %v", got)
		}
		f.sync(nodeKey("a"))
		f.discoverRaw("a", dirReport("a", "vol1", diskA))
		f.sync(volKey(oldID))
		if pv := f.pv(name); pv == nil || pv.Annotations[jobs.AnnMachineID] != "m2" {
			t.Fatalf("the same disk's PV is not handed to the new machine: %v", pv)
		}
		js := f.jobNames(jobs.RoleCleanup)
		if len(js) != 1 || !slices.Contains(f.job(js[0]).Spec.Template.Spec.Containers[0].Args, "--machine-id=m2") {
			t.Errorf("no cleanup under the new machine: %v", js)
		}
	})
}

// TestLateMismatchMessage: the pod's message arrives after the failed Job
// was first seen as an ordinary failure; the mismatch still wins, before
// any retry.
func TestLateMismatchMessage(t *testing.T) {
	f, pv := releasedOnMachine(t, nil, true)
	id := pv.Labels[jobs.LabelVolumeID]
	f.sync(volKey(id))
	job := naming.CleanupJobName(id, 1)
	f.failCleanup(job, 1, "")
	f.sync(volKey(id))
	f.wantEvent("CleanupFailed")
	pod, err := f.kube.CoreV1().Pods(testNS).Get(t.Context(), job+"-pod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses[0].State.Terminated = &v1.ContainerStateTerminated{ExitCode: 3,
		Message: jobs.CleanupIdentityMismatch + "disk: recorded a, found b"}
	if _, err := f.kube.CoreV1().Pods(testNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncStores()
	f.c.onPod(pod)
	if f.c.queue.Len() == 0 {
		t.Fatal("a failed cleanup pod does not requeue its volume")
	}
	f.sync(volKey(id))
	if f.pv(pv.Name) != nil || f.job(naming.CleanupJobName(id, 2)) != nil {
		t.Fatal("a late mismatch message did not stop the retry and drop the PV")
	}
	f.wantEvent("CleanupIdentityMismatch")
}

func TestOrphanCleanupIdentityMismatch(t *testing.T) {
	f, pv := releasedOnMachine(t, nil, true)
	id := pv.Labels[jobs.LabelVolumeID]
	f.sync(volKey(id))
	if err := f.kube.CoreV1().PersistentVolumes().Delete(t.Context(), pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := counterValue(t, metrics.CleanupIdentityMismatches.WithLabelValues("machine"))
	f.failCleanup(naming.CleanupJobName(id, 1), 3, jobs.CleanupIdentityMismatch+"machine: recorded machine ID m1, found machine ID m2")
	f.sync(volKey(id))
	f.clock.Step(time.Hour)
	f.sync(volKey(id))
	if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
		t.Fatalf("orphan Jobs not released, or retried: %v", got)
	}
	if counterValue(t, metrics.CleanupIdentityMismatches.WithLabelValues("machine"))-before != 1 {
		t.Error("orphan mismatch not counted")
	}
	f.wantEvent("the PV is gone, so the cleanup is not retried")
}

// TestCleanupRefusedWithoutDiskID: a PV whose disk never reported an
// identity gets no cleanup Job, from a release or from its node's deletion,
// and stays as it is.
func TestCleanupRefusedWithoutDiskID(t *testing.T) {
	for _, via := range []string{"released", "node deleted"} {
		t.Run(via, func(t *testing.T) {
			f, pv := releasedOnMachine(t, map[string]string{config.KeyDeleteUnboundPVsOfDeletedNodes: "true"}, false)
			if via == "node deleted" {
				if err := f.kube.CoreV1().Nodes().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				f.syncStores()
				_, ctx := ktesting.NewTestContext(t)
				if err := f.c.sync(ctx, nodeKey("a")); err == nil {
					t.Error("the deleted node's unwipable PV was handled without an error to retry")
				}
				f.syncStores()
			} else {
				f.sync(volKey(pv.Labels[jobs.LabelVolumeID]))
			}
			if got := f.jobNames(jobs.RoleCleanup); len(got) != 0 {
				t.Fatalf("cleanup Jobs %v for a PV without a disk identity", got)
			}
			now := f.pv(pv.Name)
			if now == nil || now.Status.Phase != v1.VolumeReleased || !slices.Contains(now.Finalizers, jobs.FinalizerPVProtection) {
				t.Fatal("the PV did not stay as it was")
			}
			f.wantEvent("the disk's identity was never recorded")
		})
	}
}

// TestNodeGoneCleanupJobCarriesIdentity: the Job created for a released PV
// of a deleted Node checks the PV's machine and disk wherever it runs.
func TestNodeGoneCleanupJobCarriesIdentity(t *testing.T) {
	f, pv := releasedOnMachine(t, map[string]string{config.KeyDeleteUnboundPVsOfDeletedNodes: "true"}, true)
	if err := f.kube.CoreV1().Nodes().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncStores()
	f.sync(nodeKey("a"))
	j := f.job(naming.CleanupJobName(pv.Labels[jobs.LabelVolumeID], 1))
	if j == nil {
		t.Fatalf("no cleanup Job for the deleted node's released PV; Jobs %v", f.jobNames(jobs.RoleCleanup))
	}
	args := j.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--machine-id=m1", "--system-uuid=u1", "--disk-id=" + string(pathDiskID(vol1))} {
		if !slices.Contains(args, want) {
			t.Errorf("cleanup args %v lack %s", args, want)
		}
	}
}

// TestUnidentifiedJobRetry: a failed Job made before Jobs carried the disk's
// identity is retried as a new Job built from the PV, which carries it; with
// the PV gone it is kept as the lock and not retried.
func TestUnidentifiedJobRetry(t *testing.T) {
	for _, orphan := range []bool{false, true} {
		t.Run(map[bool]string{false: "PV present", true: "PV gone"}[orphan], func(t *testing.T) {
			f, pv := releasedOnMachine(t, nil, true)
			id := pv.Labels[jobs.LabelVolumeID]
			f.sync(volKey(id))
			old := f.job(naming.CleanupJobName(id, 1))
			delete(old.Annotations, jobs.AnnDiskID)
			ctr := &old.Spec.Template.Spec.Containers[0]
			ctr.Args = slices.DeleteFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--disk-id=") })
			if _, err := f.kube.BatchV1().Jobs(testNS).Update(t.Context(), old, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if orphan {
				if err := f.kube.CoreV1().PersistentVolumes().Delete(t.Context(), pv.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			f.failCleanup(old.Name, 1, "--disk-id is required and must be a disk identity")
			f.sync(volKey(id))
			f.clock.Step(time.Hour)
			f.sync(volKey(id))
			retry := f.job(naming.CleanupJobName(id, 2))
			if orphan {
				if retry != nil || f.job(old.Name) == nil {
					t.Fatal("an unidentified orphan Job was retried or released")
				}
				f.wantEvent("records no disk identity")
				return
			}
			if retry == nil || !slices.Contains(retry.Spec.Template.Spec.Containers[0].Args, "--disk-id="+string(pathDiskID(vol1))) {
				t.Fatalf("retry %v does not carry the PV's disk identity", retry)
			}
			if f.job(old.Name) != nil {
				t.Error("the unidentified Job was not released after its successor was created")
			}
		})
	}
}
