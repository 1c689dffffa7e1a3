package controller

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// TestUnrecordedDiskStampedOnlyWithoutDoubt: a PV published before disks
// were recorded is stamped with the disk its path leads to only while it is
// Available or Bound and its path was reported without a gap. A Released
// PV, or one whose disk was missing, is never stamped with whatever is at
// its path (a disk swapped meanwhile would be wiped): it gets a
// CleanupRefused Event and no cleanup Job until an admin sets
// admin-action=wipe, which records the disk there and wipes it.
func TestUnrecordedDiskStampedOnlyWithoutDoubt(t *testing.T) {
	tests := []struct {
		name        string
		phase       v1.PersistentVolumePhase
		missingGap  bool
		adminWipe   bool
		wantStamped bool
		wantJob     bool
	}{
		{name: "bound, present throughout", phase: v1.VolumeBound, wantStamped: true},
		{name: "released", phase: v1.VolumeReleased},
		{name: "bound, its disk missing in between", phase: v1.VolumeBound, missingGap: true},
		{name: "released, an admin asked for the wipe", phase: v1.VolumeReleased, adminWipe: true, wantStamped: true, wantJob: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", dirReport("a", "vol1", diskA))
			id := naming.MachineVolumeID("a", vol1, "m1", "u1")
			name := naming.PVNameForID(id)
			f.forgetDiskID(name)
			f.setPhase(name, tc.phase, true)
			if tc.missingGap {
				f.discoverRaw("a", fsReport("a"))
				if _, ok := f.pv(name).Annotations[jobs.AnnVolumeMissing]; !ok {
					t.Fatal("setup: PV not marked missing")
				}
			}
			if tc.adminWipe {
				f.adminAction(name, jobs.AdminActionWipe)
			}
			f.sync(volKey(id))
			f.events()

			f.discoverRaw("a", dirReport("a", "vol1", diskB)) // another disk, or the same: nothing tells
			f.sync(volKey(id))
			pv := f.pv(name)
			if stamped := pv.Annotations[jobs.AnnDiskID] == string(diskB); stamped != tc.wantStamped {
				t.Fatalf("stamped with the disk at the path = %v, want %v: %v", stamped, tc.wantStamped, pv.Annotations)
			}
			js, _ := f.c.cleanupJobs(id)
			if (len(js) > 0) != tc.wantJob {
				t.Fatalf("cleanup Jobs %v, want one: %v", f.jobNames(jobs.RoleCleanup), tc.wantJob)
			}
			if tc.wantJob && !slices.Contains(js[0].Spec.Template.Spec.Containers[0].Args, "--disk-id="+string(diskB)) {
				t.Errorf("the admin's wipe is not checked against the disk recorded: %v", js[0].Spec.Template.Spec.Containers[0].Args)
			}
			if _, missing := pv.Annotations[jobs.AnnVolumeMissing]; tc.missingGap && !missing {
				t.Error("the missing mark was cleared by a disk nothing proves to be the PV's")
			}
			if !tc.wantStamped {
				evs := strings.Join(f.events(), "\n")
				if !strings.Contains(evs, "CleanupRefused") || !strings.Contains(evs, jobs.AnnAdminAction+"="+jobs.AdminActionWipe) {
					t.Errorf("no CleanupRefused Event naming the admin's action: %s", evs)
				}
			}
		})
	}
}
