package controller

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// A directory baked into a VM image: every machine cloned from the image
// has its file system UUID and file handle; each machine has its own ID.
const bakedUUID = "5d1e7c3a-9b2f-4a6e-8c0d-1f2e3a4b5c6d"

var bakedHandle = []byte{12, 0, 0, 0, 7, 0, 0, 0}

func bakedDir(machineID string) identity.ID {
	return identity.OSFS(bakedUUID, 1, bakedHandle, machineID)
}

// TestRecreatedMachinesBakedDirectoryNotAdopted (review N1, cloned
// images): a node recreated from its VM image under the same name (cloud
// autohealing keeps names) has the image's empty baked directory at the
// PV's path, with the file system UUID and handle the old machine had.
// Discovery reads it bound to the machine (osfs), so the master does not
// take it for the old PV's disk: the PV stays the old machine's, its claim
// keeps DataLoss and stays blocked, and nothing is published at the path.
// Before, discovery read fs for both machines and the PV was handed to the
// new machine with its claim's health cleared.
func TestRecreatedMachinesBakedDirectoryNotAdopted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recorded identity.ID
	}{
		{name: "recorded bound to the old machine", recorded: bakedDir("3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b")},
		{name: "recorded as fs before directories on the OS file system were bound", recorded: identity.FS(bakedUUID, 1, bakedHandle)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", dirReport("a", "vol1", tc.recorded))
			old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
			f.setPhase(old, v1.VolumeBound, true)
			f.setMachine("a", "m2", "u2")
			f.sync(nodeKey("a"))
			f.events()

			f.discoverRaw("a", dirReport("a", "vol1", bakedDir("b2c4d6e8f0a1b3c5d7e9f1a2b3c4d5e6")))
			f.sync(volKey(naming.MachineVolumeID("a", vol1, "m1", "u1")))
			pv := f.pv(old)
			if pv == nil {
				t.Fatal("the old PV is gone")
			}
			if m := pv.Annotations[jobs.AnnMachineID]; m != "m1" {
				t.Errorf("old PV's machine %q, want m1: the baked directory was taken for its disk", m)
			}
			if pv.Annotations[jobs.AnnDiskID] != string(tc.recorded) {
				t.Errorf("old PV's disk %q, want %q", pv.Annotations[jobs.AnnDiskID], tc.recorded)
			}
			if fresh := f.pv(naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m2", "u2"))); fresh != nil {
				t.Errorf("a PV was published at the old PV's path: %s", fresh.Name)
			}
			if _, blocked := f.blockedClaims()[blockedclaims.Key("default", "claim")]; !blocked {
				t.Error("the claim of the old PV is not blocked")
			}
			claim, err := f.kube.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), "claim", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := claim.Status.HealthStatus; h == nil || len(h.HealthConditions) != 1 || h.HealthConditions[0].Status != v1.VolumeHealthDataLoss {
				t.Errorf("claim health %+v, want DataLoss kept", h)
			}
			evs := f.events()
			for _, e := range evs {
				if strings.Contains(e, "MachineChangedDiskKept") {
					t.Errorf("the baked directory was taken for the PV's disk: %s", e)
				}
			}
			if !slices.ContainsFunc(evs, func(e string) bool {
				return strings.Contains(e, "DiskIdentityUnknown") && strings.Contains(e, "OS file system") &&
					!strings.Contains(e, "restore its old machine ID")
			}) {
				t.Errorf("no Event says the path is on the new machine's OS file system: %q", evs)
			}
		})
	}
}
