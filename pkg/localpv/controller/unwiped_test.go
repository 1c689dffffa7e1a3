package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

var (
	diskWWN1 = identity.WWN("naa.5000c500a1b2c3d4")
	diskWWN2 = identity.WWN("naa.5000c500a1b2c3d5")
)

// dropUnwiped publishes /mnt/blk/sdb (diskWWN1) on node a, binds it and
// drops it without a wipe as drop says, and returns the dropped PV's name.
func dropUnwiped(f *fixture, drop string) string {
	f.t.Helper()
	f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", diskWWN1)))
	volID := naming.MachineVolumeID("a", "/mnt/blk/sdb", "m1", "u1")
	name := naming.PVNameForID(volID)
	switch drop {
	case "node deleted":
		// As nodecleanup drops the PV of a deleted node after releasing its
		// claim: remembered, then deleted without a wipe.
		f.setPhase(name, v1.VolumeBound, true)
		if err := f.c.unwiped.Remember(f.t.Context(), f.pv(name), "node a deleted"); err != nil {
			f.t.Fatal(err)
		}
		if err := f.kube.CoreV1().PersistentVolumes().Delete(f.t.Context(), name, metav1.DeleteOptions{}); err != nil {
			f.t.Fatal(err)
		}
		f.syncStores()
	default: // its cleanup found another disk
		f.setPhase(name, v1.VolumeReleased, true)
		f.sync(volKey(volID))
		f.failCleanup(naming.CleanupJobName(volID, 1), 3, jobs.CleanupIdentityMismatch+"disk: recorded wwn:naa.1, found wwn:naa.2")
		f.sync(volKey(volID))
	}
	if f.pv(name) != nil {
		f.t.Fatal("setup: PV not dropped")
	}
	if len(f.unwipedKeys()) != 1 {
		f.t.Fatal("setup: the unwiped disk is not remembered")
	}
	return name
}

func (f *fixture) unwipedKeys() []string {
	f.t.Helper()
	l, err := f.dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource).List(f.t.Context(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var keys []string
	for _, u := range l.Items {
		keys = append(keys, u.GetName())
	}
	return keys
}

// adminAction sets the admin-action annotation on a PV.
func (f *fixture) adminAction(name, action string) {
	f.t.Helper()
	pv := f.pv(name)
	pv.Annotations[jobs.AnnAdminAction] = action
	if _, err := f.kube.CoreV1().PersistentVolumes().Update(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// TestReturnedUnwipedDiskIsHeld: the disk of a PV dropped without a wipe
// (its node was deleted and its claim released, or its cleanup found
// another disk) that comes back, at its path or another, is held: a PV no
// claim can bind, no cleanup Job, a DiskHeld Event and a metric, even if
// the held PV is deleted. Only an admin's action wipes it (a cleanup Job
// checked against its identity, then the clean disk is published) or keeps
// it (published again with its data).
func TestReturnedUnwipedDiskIsHeld(t *testing.T) {
	tests := []struct {
		name, drop, path, action string
		comeBack                 func(f *fixture)
	}{
		{name: "a deleted node's disk back at its path, wiped by the admin", drop: "node deleted", path: "/mnt/blk/sdb",
			action: jobs.AdminActionWipe, comeBack: func(f *fixture) { f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", diskWWN1))) }},
		{name: "a deleted node's disk back, kept by the admin", drop: "node deleted", path: "/mnt/blk/sdb",
			action: jobs.AdminActionKeep, comeBack: func(f *fixture) { f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", diskWWN1))) }},
		{name: "a deleted node's disk back, its held PV deleted", drop: "node deleted", path: "/mnt/blk/sdb",
			comeBack: func(f *fixture) { f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", diskWWN1))) }},
		{name: "a mismatched disk back under another link, wiped by the admin", drop: "mismatch", path: "/mnt/blk/wwn-1",
			action: jobs.AdminActionWipe, comeBack: func(f *fixture) {
				f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdc", diskWWN2), blockVol("wwn-1", "sdb", diskWWN1)))
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete),
				newClass("blk", v1.PersistentVolumeReclaimDelete))
			dropped := dropUnwiped(f, tc.drop)
			metrics.Register()
			held0, _ := testutil.GetCounterMetricValue(metrics.HeldDisks)
			f.events()

			tc.comeBack(f)
			retID := naming.MachineVolumeID("a", tc.path, "m1", "u1")
			f.expectHeld(retID, held0)
			switch tc.action {
			case "":
				f.deleteHeld(retID)
			case jobs.AdminActionKeep:
				f.keepHeld(retID)
			default:
				f.wipeHeld(retID)
				tc.comeBack(f)
				if pv := f.pv(naming.PVNameForID(retID)); pv == nil || pvstate.Held(pv) || pv.Spec.ClaimRef != nil {
					t.Errorf("the wiped disk is not published (dropped PV %s): %v", dropped, pv)
				}
			}
		})
	}
}

// expectHeld checks that a volume's disk is held by a PV no claim can bind,
// with a DiskHeld Event and the metric counted, and that no cleanup Job
// runs for it once the PV controller shows it Released.
func (f *fixture) expectHeld(id string, held0 float64) {
	f.t.Helper()
	name := naming.PVNameForID(id)
	pv := f.pv(name)
	if pv == nil || !pvstate.Held(pv) || pv.Labels[jobs.LabelHeld] != "true" || pv.Spec.ClaimRef == nil ||
		pv.Spec.ClaimRef.UID != pvstate.HeldClaimUID || pv.Annotations[jobs.AnnDiskID] != string(diskWWN1) {
		f.t.Fatalf("the returned disk is not held by a PV no claim can bind: %v", pv)
	}
	f.wantEvent("DiskHeld")
	if held, _ := testutil.GetCounterMetricValue(metrics.HeldDisks); held != held0+1 {
		f.t.Errorf("held_disks_total = %v, want %v", held, held0+1)
	}
	f.setPhase(name, v1.VolumeReleased, false) // the PV controller finds no such claim
	f.sync(volKey(id))
	if js := f.jobNames(jobs.RoleCleanup); len(js) != 0 {
		f.t.Fatalf("a held disk got cleanup Jobs %v before an admin's action", js)
	}
}

// deleteHeld deletes a held PV without an admin's action: nothing is wiped
// and nothing lets go of it.
func (f *fixture) deleteHeld(id string) {
	f.t.Helper()
	name := naming.PVNameForID(id)
	// The fake apiserver keeps no finalizers, so the PV is shown as the real
	// one keeps it, with the master's.
	pv := f.pv(name)
	pv.DeletionTimestamp = &metav1.Time{Time: f.clock.Now()}
	if _, err := f.kube.CoreV1().PersistentVolumes().Update(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
	f.sync(volKey(id))
	if js := f.jobNames(jobs.RoleCleanup); len(js) != 0 {
		f.t.Fatalf("a deleted held PV got cleanup Jobs %v", js)
	}
	if pv := f.pv(name); pv == nil || !slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) || len(f.unwipedKeys()) != 1 {
		f.t.Errorf("a deleted held PV let go of its disk: %v, memory %v", pv, f.unwipedKeys())
	}
}

// keepHeld keeps a held disk as an admin does: its PV is published again
// with its data, and the disk forgotten as unwiped.
func (f *fixture) keepHeld(id string) {
	f.t.Helper()
	name := naming.PVNameForID(id)
	f.adminAction(name, jobs.AdminActionKeep)
	f.sync(volKey(id))
	pv := f.pv(name)
	if pv == nil || pvstate.Held(pv) || pv.Spec.ClaimRef != nil || len(f.unwipedKeys()) != 0 || len(f.jobNames(jobs.RoleCleanup)) != 0 {
		f.t.Fatalf("the kept disk is not published again with its data: %v, memory %v", pv, f.unwipedKeys())
	}
}

// wipeHeld has a held disk wiped as an admin does: a cleanup Job checked
// against its identity, then the PV deleted and the disk forgotten.
func (f *fixture) wipeHeld(id string) {
	f.t.Helper()
	name := naming.PVNameForID(id)
	f.adminAction(name, jobs.AdminActionWipe)
	f.sync(volKey(id))
	js, _ := f.c.cleanupJobs(id)
	if len(js) != 1 || !slices.Contains(js[0].Spec.Template.Spec.Containers[0].Args, "--disk-id="+string(diskWWN1)) {
		f.t.Fatalf("no cleanup Job of the held disk checked against its identity: %v", js)
	}
	f.finishJob(js[0].Name, true)
	f.sync(volKey(id))
	if keys := f.unwipedKeys(); len(keys) != 0 || f.pv(name) != nil {
		f.t.Fatalf("after the wipe: memory %v, held PV %v", keys, f.pv(name))
	}
}

// rememberedDisks returns the master's memory of unwiped disks.
func (f *fixture) rememberedDisks() map[string]unwiped.Disk {
	f.t.Helper()
	disks, err := f.c.unwiped.Load(f.t.Context())
	if err != nil {
		f.t.Fatal(err)
	}
	return disks
}

// TestDroppedDiskIsRememberedBeforeItsPVGoes (review L1 a): every path that
// deletes a released PV before its disk is wiped remembers the disk first:
// a node-gone PV dropped by the cleanup, and a PV of a deleted node whose
// cleanup Job waits for the node. The Job's success forgets it; a Job lost
// before (deleted with its namespace) leaves it remembered.
func TestDroppedDiskIsRememberedBeforeItsPVGoes(t *testing.T) {
	tests := []struct {
		name       string
		nodeGone   bool // the release of claims on deleted nodes marked the PV
		wantJob    bool
		jobOutcome string // "succeeded", "deleted"
		wantAfter  int
	}{
		{name: "node-gone PV dropped without a wipe", nodeGone: true, wantAfter: 1},
		{name: "deleted node's PV, its Job deleted with the namespace", wantJob: true, jobOutcome: "deleted", wantAfter: 1},
		{name: "deleted node's PV, its Job wipes the disk", wantJob: true, jobOutcome: "succeeded", wantAfter: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{config.KeyDeleteUnboundPVsOfDeletedNodes: "true"}, machineNode("a", "m1", "u1"),
				newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", fsReport("a", "vol1"))
			id := naming.MachineVolumeID("a", vol1, "m1", "u1")
			name := naming.PVNameForID(id)
			f.setPhase(name, v1.VolumeBound, true)
			if tc.nodeGone {
				pv := f.pv(name)
				pv.Annotations[jobs.AnnNodeGone] = start.Format(time.RFC3339)
				if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.kube.CoreV1().Nodes().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.setPhase(name, v1.VolumeReleased, false)
			f.sync(nodeKey("a"))
			f.sync(volKey(id))
			if f.pv(name) != nil {
				t.Fatal("setup: the PV was not deleted")
			}
			if got := f.rememberedDisks(); len(got) != 1 {
				t.Fatalf("remembered %v after the PV went, want its disk", got)
			}
			js := f.jobNames(jobs.RoleCleanup)
			if (len(js) > 0) != tc.wantJob {
				t.Fatalf("cleanup Jobs %v, want one: %t", js, tc.wantJob)
			}
			switch tc.jobOutcome {
			case "succeeded":
				f.finishJob(js[0], true)
			case "deleted":
				if err := f.kube.BatchV1().Jobs(testNS).Delete(t.Context(), js[0], metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				f.syncStores()
			}
			f.sync(volKey(id))
			if got := f.rememberedDisks(); len(got) != tc.wantAfter {
				t.Errorf("remembered %v at the end, want %d", got, tc.wantAfter)
			}
		})
	}
}

// TestMasterFailsClosedWithoutMemory (review L1 b): while the memory of
// unwiped disks is not served (its CRD deleted) or holds an entry that
// does not parse, the master neither publishes nor drops a PV, and Ready
// says why; once the memory is restored it carries on.
func TestMasterFailsClosedWithoutMemory(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(f *fixture) (restore func())
	}{
		{name: "memory not served", breakIt: func(f *fixture) func() {
			saved := f.dyn.ReactionChain
			f.dyn.PrependReactor("*", v1alpha1.UnwipedDiskResource, func(core.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewNotFound(v1alpha1.UnwipedDiskGroupVersionResource.GroupResource(), "")
			})
			return func() { f.dyn.ReactionChain = saved }
		}},
		{name: "entry edited into garbage", breakIt: func(f *fixture) func() {
			disks := f.dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource)
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(),
				"kind": v1alpha1.UnwipedDiskKind, "metadata": map[string]any{"name": "disk-x"}, "spec": map[string]any{"diskID": "{"}}}
			if _, err := disks.Create(f.t.Context(), u, metav1.CreateOptions{}); err != nil {
				f.t.Fatal(err)
			}
			return func() {
				if err := disks.Delete(f.t.Context(), "disk-x", metav1.DeleteOptions{}); err != nil {
					f.t.Fatal(err)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), machineNode("b", "m2", "u2"),
				newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", fsReport("a", "vol1"))
			id := naming.MachineVolumeID("a", vol1, "m1", "u1")
			name := naming.PVNameForID(id)
			pv := f.pv(name)
			pv.Annotations[jobs.AnnNodeGone] = start.Format(time.RFC3339)
			if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.setPhase(name, v1.VolumeBound, true)
			if err := f.kube.CoreV1().Nodes().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.setPhase(name, v1.VolumeReleased, false)
			restore := tc.breakIt(f)
			f.clock.Step(memoryCheckInterval)
			_, ctx := ktesting.NewTestContext(t)
			for _, key := range []string{nodeKey("b"), volKey(id)} {
				f.c.requestDiscovery("b")
				if err := f.c.sync(ctx, key); err == nil || !strings.Contains(err.Error(), "memory of unwiped disks") {
					t.Errorf("sync %s: %v, want the memory's error", key, err)
				}
				f.syncStores()
			}
			if f.pv(name) == nil || f.job(naming.DiscoveryJobName("b")) != nil {
				t.Fatal("the master acted without its memory")
			}
			if err := f.c.memoryErr(); err == nil {
				t.Error("Ready while the memory is broken")
			}
			restore()
			f.sync(volKey(id))
			if f.pv(name) != nil || len(f.rememberedDisks()) != 1 {
				t.Errorf("after the memory was restored: PV kept %t, remembered %v", f.pv(name) != nil, f.rememberedDisks())
			}
			if err := f.c.memoryErr(); err != nil {
				t.Errorf("Ready: %v", err)
			}
		})
	}
}
