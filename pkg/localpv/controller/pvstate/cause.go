package pvstate

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// Holder names who records a disk identity ("PV <name>", "the PV at
// <path>"), or returns "" when no PV the master knows of does.
type Holder func(id identity.ID) string

// DiskReplacedCause says why a PV's path does not lead to its own disk, and
// the fix: the disk of another PV there means the mounts were swapped or
// moved (restore them), an unknown disk means the PV's disk is not mounted
// there. It never suggests accepting the disk found.
func DiskReplacedCause(path string, own, found identity.ID, holder string) string {
	if holder != "" {
		return fmt.Sprintf("its path %s leads to the disk of %s (%s), not to its own (%s): the disks are mounted at each other's "+
			"paths; restore the mounts (each disk at its PV's path, for instance by file system UUID in /etc/fstab) and the PVs "+
			"match again with no change to them", path, holder, found, own)
	}
	return fmt.Sprintf("its path %s leads to a disk that no PV records (%s), not to its own (%s): its disk is not mounted "+
		"there; put its disk back at the path (check the mounts); if its disk is lost, delete the claim and the PV", path, found, own)
}

// MachineReplacedCause says why a PV's node name no longer runs its
// machine, and the fix. The PV is handed over on its own when the new
// machine's discovery proves its disk; nothing is to be edited.
func MachineReplacedCause(node, path, recorded string) string {
	return fmt.Sprintf("node %s now runs on another machine than the one its disk at %s was published on (%s); when "+
		"discovery proves that the disk at the path is its own, the PV is handed to the new machine on its own; if the disk "+
		"did not move with the node, restore the old machine or delete the claim", node, path, recorded)
}

// Cause says why a marked PV's claim is refused, from its marks: nothing
// for an unmarked PV. holder names whose disk a disk-replaced PV's path
// leads to.
func Cause(pv *v1.PersistentVolume, holder Holder) string {
	a := pv.Annotations
	if _, ok := a[jobs.AnnDiskReplaced]; ok {
		found := identity.ID(a[jobs.AnnDiskFound])
		who := ""
		if found != "" && holder != nil {
			who = holder(found)
		}
		return DiskReplacedCause(a[jobs.AnnHostPath], identity.ID(a[jobs.AnnDiskID]), found, who)
	}
	if _, ok := a[jobs.AnnMachineReplaced]; ok {
		return MachineReplacedCause(a[jobs.AnnNode], a[jobs.AnnHostPath], fmt.Sprintf("machineID %q, systemUUID %q", a[jobs.AnnMachineID], a[jobs.AnnSystemUUID]))
	}
	return ""
}

// HolderAmong returns a Holder that finds, among pvs, the PV other than pv
// on pv's node that records a disk.
func HolderAmong(pv *v1.PersistentVolume, pvs []*v1.PersistentVolume) Holder {
	return func(id identity.ID) string {
		for _, o := range pvs {
			if o.Name != pv.Name && o.Annotations[jobs.AnnNode] == pv.Annotations[jobs.AnnNode] &&
				identity.ID(o.Annotations[jobs.AnnDiskID]) == id {
				return "PV " + o.Name
			}
		}
		return ""
	}
}
