package publishing_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

// TestSharedIdentity: an identity that two devices of one node report (two
// GCE local SSDs by their nvme_card serial, two LUNs with one WWN, a cloned
// file system) is no identity: neither volume is published, and an Event
// says why. Before, the first was published and the second skipped as
// already published.
func TestSharedIdentity(t *testing.T) {
	mine := "lpv/" + provisioner
	gce := identity.Serial("nvme_card", "nvme_card", 402653184000)
	lun := identity.WWN("naa.600a098038303053453f463045727a6f")
	for _, tc := range []publishCase{
		{name: "two local SSDs with one placeholder serial", vols: map[string]identity.ID{"ssd0": gce, "ssd1": gce},
			devs: map[string]string{"ssd0": "nvme0n1", "ssd1": "nvme1n1"}, class: fastClass(mine), wantEvent: "DiskIdentityShared"},
		{name: "two LUNs with one WWN and no serial", vols: map[string]identity.ID{"lun0": lun, "lun1": lun},
			devs: map[string]string{"lun0": "sdb", "lun1": "sdc"}, class: fastClass(mine), wantEvent: "DiskIdentityShared"},
		{name: "a PV's disk that now shares its identity is left as it is", vols: map[string]identity.ID{"vol1": lun, "vol2": lun},
			devs: map[string]string{"vol1": "sdb", "vol2": "sdc"}, class: fastClass(mine), wantEvent: "DiskIdentityShared",
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", lun, v1.VolumeBound)}}},
	} {
		t.Run(tc.name, func(t *testing.T) { runPublishCase(t, tc) })
	}
}

// TestLegacyIdentityRefined: a PV that records an identity in a form no
// longer produced (the bare file handle every ext4 root shares, an NVMe
// controller's serial, a WWN without its serial) is not taken for another
// disk when its disk is read in the new form: the new form is recorded. Before, the PV was marked
// disk-replaced and its claim warned of data loss.
func TestLegacyIdentityRefined(t *testing.T) {
	mine := "lpv/" + provisioner
	root := []byte{2, 0, 0, 0, 0, 0, 0, 0}
	legacyDir, dir := identity.FileHandle(1, root), identity.FS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, root)
	legacyNVMe := identity.Serial("QEMU NVMe Ctrl", "deadbeef", 1<<30)
	lun := identity.WWN("naa.600a098038303053453f463045727a6f")
	nvme := identity.NVMe("QEMU NVMe Ctrl", "deadbeef", 1<<30, identity.NVMeNamespace{NSID: "2", UUID: "4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"})
	pvName := naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/vol1", "m1", "u1"))
	recorded := func(want identity.ID) func(t *testing.T, kube *fake.Clientset) {
		return func(t *testing.T, kube *fake.Clientset) {
			pv, err := kube.CoreV1().PersistentVolumes().Get(t.Context(), pvName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := identity.ID(pv.Annotations[jobs.AnnDiskID]); got != want {
				t.Errorf("PV records %q, want %q", got, want)
			}
		}
	}
	for _, tc := range []publishCase{
		{name: "a directory's bare file handle, now with its UUID", vols: map[string]identity.ID{"vol1": dir}, class: fastClass(mine),
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", legacyDir, v1.VolumeBound)}}, check: recorded(dir)},
		{name: "an NVMe namespace by its controller's serial, now by its UUID", vols: map[string]identity.ID{"vol1": nvme}, class: fastClass(mine),
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", legacyNVMe, v1.VolumeBound)}}, check: recorded(nvme)},
		{name: "a LUN's WWN, now with its serial", vols: map[string]identity.ID{"vol1": identity.WWNSerial("naa.600a098038303053453f463045727a6f", "SN0001")},
			class: fastClass(mine), state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", lun, v1.VolumeBound)}},
			check: recorded(identity.WWNSerial("naa.600a098038303053453f463045727a6f", "SN0001"))},
		{name: "an old agent's bare file handle changes nothing", vols: map[string]identity.ID{"vol1": legacyDir}, class: fastClass(mine),
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", legacyDir, v1.VolumeBound)}}, check: recorded(legacyDir)},
		{name: "a released PV keeps its legacy record for its cleanup to refuse", vols: map[string]identity.ID{"vol1": dir}, class: fastClass(mine),
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", legacyDir, v1.VolumeReleased)}}, check: recorded(legacyDir)},
		// Every ext4 root has the handle a legacy record holds: a disk that
		// another PV records is that PV's, whatever the handle says.
		{name: "a legacy handle's path leading to another PV's disk is not refined", class: fastClass(mine),
			vols:  map[string]identity.ID{"vol1": dir, "vol2": identity.FS("9d3e0c1a-7b2f-4e6d-8c5a-1f0e9d8c7b6a", 1, root)},
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", legacyDir, v1.VolumeBound), existingPV("vol2", dir, v1.VolumeBound)}},
			wantOps: []string{"warnClaim " + pvName + " DiskReplaced DataLoss",
				"warnClaim " + naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/vol2", "m1", "u1")) + " DiskReplaced DataLoss"},
			wantEvent: "DiskReplaced", check: recorded(legacyDir)},
		{name: "a missing PV keeps its legacy record", vols: map[string]identity.ID{"vol1": dir}, class: fastClass(mine),
			state: fakeState{onNode: []*v1.PersistentVolume{missingPV(existingPV("vol1", legacyDir, v1.VolumeBound))}}, check: recorded(legacyDir)},
		{name: "a directory on the OS file system recorded as fs, now bound to its machine", class: fastClass(mine),
			vols:  map[string]identity.ID{"vol1": identity.OSFS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, root, "3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b")},
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", dir, v1.VolumeBound)}},
			check: recorded(identity.OSFS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, root, "3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b"))},
		{name: "a directory recorded bound to its machine, read without the machine-id file, changes nothing", class: fastClass(mine),
			vols: map[string]identity.ID{"vol1": dir},
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1",
				identity.OSFS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, root, "3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b"), v1.VolumeBound)}},
			check: recorded(identity.OSFS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, root, "3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b"))},
		{name: "another directory than the legacy handle's is another disk", class: fastClass(mine),
			vols:    map[string]identity.ID{"vol1": identity.FS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, []byte{12, 0, 0, 0, 1, 0, 0, 0})},
			state:   fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", legacyDir, v1.VolumeBound)}},
			wantOps: []string{"warnClaim " + pvName + " DiskReplaced DataLoss"}, wantEvent: "DiskReplaced"},
	} {
		t.Run(tc.name, func(t *testing.T) { runPublishCase(t, tc) })
	}
}

// TestUnwipedUnderLegacyIdentity: a disk remembered as unwiped under a
// legacy identity (a released PV recorded as a bare file handle, dropped
// because its cleanup found no proof) is held for an admin, as any returned
// unwiped disk is, when it is reported under its new identity on its node. Before, it was
// published with the old tenant's data.
func TestUnwipedUnderLegacyIdentity(t *testing.T) {
	mine := "lpv/" + provisioner
	root := []byte{2, 0, 0, 0, 0, 0, 0, 0}
	legacy, now := identity.FileHandle(1, root), identity.FS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, root)
	remembered := func(node string) []runtime.Object { return rememberedAs(t, node, legacy) }
	for _, tc := range []publishCase{
		{name: "on its node it is held for an admin", vols: map[string]identity.ID{"vol1": now}, class: fastClass(mine),
			// The DiskHeld Event names who remembered it.
			extra: remembered("a"), wantEvent: "remembered by the installation in namespace lpv as UnwipedDisk disk-",
			wantPVs: []string{naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/vol1", "m1", "u1"))}},
		// The same disk under a second path (a bind mount, a second class)
		// is held once: an admin's keep on two held PVs would publish it
		// twice.
		{name: "under two paths it is held once", vols: map[string]identity.ID{"vol1": now, "vol2": now},
			devs: map[string]string{"vol1": "loop4", "vol2": "loop4"}, class: fastClass(mine),
			extra: remembered("a"), wantEvent: "DiskAlreadyPublished",
			wantPVs: []string{naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/vol1", "m1", "u1"))}},
		{name: "another node's weak record is not this disk", vols: map[string]identity.ID{"vol1": now}, class: fastClass(mine),
			extra: remembered("b"), wantPVs: []string{naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/vol1", "m1", "u1"))}},
		// Every ext4 root has the same file handle: a weak record of one
		// path of the node is not the disk at another.
		{name: "a weak record at another path of the node is not this disk", vols: map[string]identity.ID{"vol2": now},
			class: fastClass(mine), extra: remembered("a"),
			wantPVs: []string{naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/vol2", "m1", "u1"))}},
	} {
		t.Run(tc.name, func(t *testing.T) { runPublishCase(t, tc) })
	}
}

// missingPV marks pv missing since the test's start.
func missingPV(pv *v1.PersistentVolume) *v1.PersistentVolume {
	pv.Annotations[jobs.AnnVolumeMissing] = "2026-01-01T00:00:00Z"
	return pv
}

// rememberedAs is the memory of one disk dropped unwiped on node, as id.
func rememberedAs(t *testing.T, node string, id identity.ID) []runtime.Object {
	t.Helper()
	return []runtime.Object{unwipedtest.Object(unwiped.Disk{ID: id, PV: "old-pv", Node: node, Path: "/mnt/fast/vol1",
		Since: "2026-01-01T00:00:00Z", Reason: "identity_mismatch"})}
}

// TestUnwipedBakedDirectoryPerNode (review N1, cloned images): a directory
// baked into a VM image has the image's file system UUID and handle on
// every node cloned from it. Remembered as unwiped, on one node, under the
// strong fs an older release recorded, it is held on that node only, where
// it is read as the machine-bound osfs; the same baked directory of every
// other node is published. Before, the strong legacy entry held it on
// every node.
func TestUnwipedBakedDirectoryPerNode(t *testing.T) {
	mine := "lpv/" + provisioner
	const u = "5d1e7c3a-9b2f-4a6e-8c0d-1f2e3a4b5c6d"
	h := []byte{12, 0, 0, 0, 7, 0, 0, 0}
	legacy, now := identity.FS(u, 1, h), identity.OSFS(u, 1, h, "3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b")
	pv := naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/vol1", "m1", "u1"))
	for _, tc := range []publishCase{
		{name: "on its node it is held for an admin", vols: map[string]identity.ID{"vol1": now}, class: fastClass(mine),
			extra: rememberedAs(t, "a", legacy), wantEvent: "DiskHeld", wantPVs: []string{pv}},
		{name: "another node's baked directory is published", vols: map[string]identity.ID{"vol1": now}, class: fastClass(mine),
			extra: rememberedAs(t, "b", legacy), wantPVs: []string{pv}},
		{name: "another node's machine-bound entry is not this directory", vols: map[string]identity.ID{"vol1": now}, class: fastClass(mine),
			extra: rememberedAs(t, "b", identity.OSFS(u, 1, h, "b2c4d6e8f0a1b3c5d7e9f1a2b3c4d5e6")), wantPVs: []string{pv}},
	} {
		t.Run(tc.name, func(t *testing.T) { runPublishCase(t, tc) })
	}
}
