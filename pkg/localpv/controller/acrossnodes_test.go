package controller

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

// rememberUnwiped writes an entry into the memory of unwiped disks, as
// another node's dropped PV left it.
func (f *fixture) rememberUnwiped(d unwiped.Disk) {
	f.t.Helper()
	obj := unwipedtest.Object(d)
	if _, err := f.dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource).Create(f.t.Context(), obj, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// TestReplacedMachineNotAdoptedOnAnIdentityOfTwoNodes (review N1): a strong
// identity that two nodes report at once (a file system cloned into several
// VM images, data disks made from one snapshot) names no one disk across
// machines. A node name on a new machine whose path leads to it keeps its
// old PV marked, not handed over; with no other node reporting it, the PV
// is handed over as before.
func TestReplacedMachineNotAdoptedOnAnIdentityOfTwoNodes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		elsewhere bool
		wantOwner string
		event     string
	}{
		{name: "another node reports the identity too", elsewhere: true, wantOwner: "m1", event: "DiskIdentityShared"},
		{name: "no other node reports it", wantOwner: "m2", event: "MachineChangedDiskKept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), machineNode("b", "mb", "ub"),
				newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", dirReport("a", "vol1", diskA))
			old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
			f.setPhase(old, v1.VolumeBound, true)
			if tc.elsewhere {
				f.discover("b", dirReport("b", "vol1", diskA))
			}
			f.setMachine("a", "m2", "u2")
			f.sync(nodeKey("a"))
			f.events()

			f.discoverRaw("a", dirReport("a", "vol1", diskA))
			pv := f.pv(old)
			if pv == nil {
				t.Fatal("the old PV is gone")
			}
			if m := pv.Annotations[jobs.AnnMachineID]; m != tc.wantOwner {
				t.Errorf("old PV's machine %q, want %q", m, tc.wantOwner)
			}
			f.wantEvent(tc.event)
		})
	}
}

// TestUnwipedDiskOfAnotherNodeNotFoundByAnIdentityOfTwoNodes (review N1):
// a disk remembered as unwiped on node c is held wherever it comes back,
// unless two nodes report its identity at once (a cloned file system on
// every node made from one image): then it is no disk that moved, and each
// node's volume is published.
func TestUnwipedDiskOfAnotherNodeNotFoundByAnIdentityOfTwoNodes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		elsewhere bool
		wantHeld  bool
	}{
		{name: "two nodes report the identity: published", elsewhere: true},
		{name: "one node reports it: held", wantHeld: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), machineNode("b", "mb", "ub"),
				newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.rememberUnwiped(unwiped.Disk{ID: diskA, PV: "old-pv", Node: "c", Path: "/mnt/fast/vol1",
				Since: "2026-01-01T00:00:00Z", Reason: "node_deleted"})
			if tc.elsewhere {
				f.discover("b", dirReport("b", "vol2", diskA))
			}
			f.events()
			f.discover("a", dirReport("a", "vol1", diskA))
			pv := f.pv(naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1")))
			if pv == nil {
				t.Fatal("no PV for node a's volume")
			}
			if held := pvstate.Held(pv); held != tc.wantHeld {
				t.Errorf("node a's volume held = %v, want %v", held, tc.wantHeld)
			}
			evs := strings.Join(f.events(), "\n")
			if strings.Contains(evs, "DiskHeld") != tc.wantHeld {
				t.Errorf("Events %q, want DiskHeld = %v", evs, tc.wantHeld)
			}
		})
	}
}
