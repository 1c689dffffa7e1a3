package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

// TestUnwipedDiskIsWipedWhenItReturns: a released PV dropped without a wipe
// (its link moved to another disk) leaves its disk remembered; when the disk
// comes back, at its path or another, it is wiped before it is published.
func TestUnwipedDiskIsWipedWhenItReturns(t *testing.T) {
	tests := []struct {
		name     string
		comeBack func(f *fixture)
		path     string
	}{
		{name: "at its own path", path: "/mnt/blk/sdb", comeBack: func(f *fixture) {
			f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", diskWWN1)))
		}},
		{name: "under another link", path: "/mnt/blk/wwn-1", comeBack: func(f *fixture) {
			f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdc", diskWWN2), blockVol("wwn-1", "sdb", diskWWN1)))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete),
				newClass("blk", v1.PersistentVolumeReclaimDelete))
			f.discoverRaw("a", blockReport("a", blockVol("sdb", "sdb", diskWWN1)))
			volID := naming.MachineVolumeID("a", "/mnt/blk/sdb", "m1", "u1")
			name := naming.PVNameForID(volID)
			f.setPhase(name, v1.VolumeReleased, true)
			f.sync(volKey(volID))
			f.failCleanup(naming.CleanupJobName(volID, 1), 3, jobs.CleanupIdentityMismatch+"disk: recorded wwn:naa.1, found wwn:naa.2")
			f.sync(volKey(volID))
			if f.pv(name) != nil {
				t.Fatal("setup: PV not dropped after the disk mismatch")
			}
			if _, err := f.kube.CoreV1().ConfigMaps(testNS).Get(t.Context(), unwiped.ConfigMapName, metav1.GetOptions{}); err != nil {
				t.Fatalf("the unwiped disk is not remembered: %v", err)
			}

			tc.comeBack(f)
			if pv := f.pv(naming.PVNameForID(naming.MachineVolumeID("a", tc.path, "m1", "u1"))); pv != nil {
				t.Fatalf("the unwiped disk was published as %s before a wipe", pv.Name)
			}
			f.wantEvent("UnwipedDiskReturned")
			retID := naming.MachineVolumeID("a", tc.path, "m1", "u1")
			js, _ := f.c.cleanupJobs(retID)
			if len(js) != 1 || !slices.Contains(js[0].Spec.Template.Spec.Containers[0].Args, "--disk-id="+string(diskWWN1)) {
				t.Fatalf("no cleanup Job of the returned disk checked against its identity: %v", js)
			}
			// The first attempt's pod is gone by now, as the Job controller's
			// garbage collection leaves it.
			_ = f.kube.CoreV1().Pods(testNS).Delete(t.Context(), js[0].Name+"-pod", metav1.DeleteOptions{})
			f.finishJob(js[0].Name, true)
			f.sync(volKey(retID))
			cm, _ := f.kube.CoreV1().ConfigMaps(testNS).Get(t.Context(), unwiped.ConfigMapName, metav1.GetOptions{})
			if cm != nil && len(cm.Data) != 0 {
				t.Errorf("the wiped disk is still remembered: %v", cm.Data)
			}
			tc.comeBack(f)
			if pv := f.pv(naming.PVNameForID(retID)); pv == nil || pv.Annotations[jobs.AnnDiskID] != string(diskWWN1) {
				t.Errorf("the wiped disk is not published: %v", pv)
			}
		})
	}
}

var (
	diskWWN1 = identity.WWN("naa.5000c500a1b2c3d4")
	diskWWN2 = identity.WWN("naa.5000c500a1b2c3d5")
)

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
// unwiped disks is missing or holds an entry that does not parse, the
// master neither publishes nor drops a PV, and Ready says why; once the
// memory is restored it carries on.
func TestMasterFailsClosedWithoutMemory(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(f *fixture)
	}{
		{name: "memory deleted", breakIt: func(f *fixture) {
			if err := f.kube.CoreV1().ConfigMaps(testNS).Delete(f.t.Context(), unwiped.ConfigMapName, metav1.DeleteOptions{}); err != nil {
				f.t.Fatal(err)
			}
		}},
		{name: "entry edited into garbage", breakIt: func(f *fixture) {
			cm := unwiped.EmptyConfigMap(testNS)
			cm.Data["disk-x"] = "{"
			if _, err := f.kube.CoreV1().ConfigMaps(testNS).Update(f.t.Context(), cm, metav1.UpdateOptions{}); err != nil {
				f.t.Fatal(err)
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
			tc.breakIt(f)
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
			if _, err := f.kube.CoreV1().ConfigMaps(testNS).Get(t.Context(), unwiped.ConfigMapName, metav1.GetOptions{}); err == nil {
				_ = f.kube.CoreV1().ConfigMaps(testNS).Delete(t.Context(), unwiped.ConfigMapName, metav1.DeleteOptions{})
			}
			if _, err := f.kube.CoreV1().ConfigMaps(testNS).Create(t.Context(), unwiped.EmptyConfigMap(testNS), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
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
