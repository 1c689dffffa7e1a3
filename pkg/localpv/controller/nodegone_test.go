package controller

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/cleanupjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// TestNodeGonePV: a released PV that the node cleanup marked is deleted
// without a wipe, and never gets a cleanup Job, from the cleanup nor from
// deleteUnboundPVsOfDeletedNodes; unless its Node is back on the same
// machine, when it is wiped as usual.
func TestNodeGonePV(t *testing.T) {
	tests := []struct {
		name string
		// back is the Node under the PV's node name after the deletion, if
		// any.
		back                   *v1.Node
		deleteUnboundOfDeleted bool
		wantWipe               bool
		wantEvent              string
	}{
		{name: "node gone", wantEvent: "deleting the released PV without a wipe"},
		{name: "node gone, unbound PVs of deleted nodes deleted", deleteUnboundOfDeleted: true,
			wantEvent: "deleting the released PV without a wipe"},
		{name: "another machine took the name", back: machineNode("a", "m2", "u2"), wantEvent: "deleting the released PV without a wipe"},
		{name: "back on the same machine", back: machineNode("a", "m1", "u1"), wantWipe: true, wantEvent: "NodeBack"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]string{}
			if tc.deleteUnboundOfDeleted {
				extra[config.KeyDeleteUnboundPVsOfDeletedNodes] = "true"
			}
			f := newFixture(t, extra, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", fsReport("a", "vol1"))
			id := naming.MachineVolumeID("a", vol1, "m1", "u1")
			name := naming.PVNameForID(id)
			f.setPhase(name, v1.VolumeBound, true)
			pv := f.pv(name)
			pv.Annotations[jobs.AnnNodeGone] = start.Format(time.RFC3339)
			if _, err := f.kube.CoreV1().PersistentVolumes().Update(t.Context(), pv, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := f.kube.CoreV1().Nodes().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.back != nil {
				if _, err := f.kube.CoreV1().Nodes().Create(t.Context(), tc.back, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			f.setPhase(name, v1.VolumeReleased, false) // the claim was deleted
			f.events()
			f.sync(nodeKey("a"))
			f.sync(volKey(id))
			f.sync(volKey(id))
			if got := f.jobNames(jobs.RoleCleanup); (len(got) > 0) != tc.wantWipe {
				t.Fatalf("cleanup Jobs %v, want a wipe: %v", got, tc.wantWipe)
			}
			if gone := f.pv(name) == nil; gone == tc.wantWipe {
				t.Fatalf("PV deleted before any wipe = %v, want %v", gone, !tc.wantWipe)
			}
			if tc.wantWipe && cleanupjobs.NodeGone(f.pv(name)) {
				t.Error("the mark was not removed from the PV of a node back on its machine")
			}
			f.wantEvent(tc.wantEvent)
		})
	}
}
