package jobs

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

const (
	// ManagedByValue is the app.kubernetes.io/managed-by value of every
	// object the provisioner creates.
	ManagedByValue = "local-volume-provisioner"
	// LabelManagedBy marks the provisioner's PVs, Jobs and pods.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	prefix = "localpv.nodeplug.io/"
	// LabelRole is "discovery" or "cleanup" on Jobs and their pods.
	LabelRole = prefix + "role"
	// LabelNodeID holds naming.NodeID of the node (PVs and Jobs).
	LabelNodeID = prefix + "node-id"
	// LabelVolumeID holds naming.VolumeID of a volume (PVs and cleanup Jobs).
	LabelVolumeID = prefix + "volume-id"

	// AnnNode is the node name (PVs and Jobs).
	AnnNode = prefix + "node"
	// AnnHostPath is the volume's path on the host (PVs and cleanup Jobs).
	AnnHostPath = prefix + "host-path"
	// AnnClass is the configured class the volume was found in.
	AnnClass = prefix + "class"
	// AnnKind is the report.VolumeKind of the volume.
	AnnKind = prefix + "kind"
	// AnnPVName and AnnPVUID name the PV a cleanup Job wipes.
	AnnPVName = prefix + "pv-name"
	AnnPVUID  = prefix + "pv-uid"
	// AnnAttempt is the cleanup attempt number, starting at 1.
	AnnAttempt = prefix + "attempt"
	// AnnVolumeMissing is set on a PV whose disk discovery did not find, with
	// the time it was first noticed.
	AnnVolumeMissing = prefix + "volume-missing-since"

	// AnnMachineID and AnnSystemUUID record the machine identity of the
	// node whose disk a PV is: the Node's status.nodeInfo.machineID and
	// systemUUID as the master read them from the API.
	AnnMachineID  = prefix + "machine-id"
	AnnSystemUUID = prefix + "system-uuid"
	// AnnMachineReplaced is set on a kept PV of a machine that its node
	// name no longer runs on, with the time it was noticed.
	AnnMachineReplaced = prefix + "machine-replaced-since"
	// LabelMachineReplaced ("true") selects the PVs marked with
	// AnnMachineReplaced.
	LabelMachineReplaced = prefix + "machine-replaced"

	// AnnDiskID records what a PV's disk is (package identity): written
	// when the PV is published, or on first sight for older PVs, and
	// checked by every cleanup Job before it wipes.
	AnnDiskID = prefix + "disk-id"
	// AnnDiskReplaced is set on a kept PV whose path now leads to another
	// disk than the one it was published for, with the time it was noticed.
	AnnDiskReplaced = prefix + "disk-replaced-since"
	// AnnUnwipedDisk, on a held PV and its cleanup Job, is the key of the
	// unwiped disk (a PV's disk dropped without a wipe) it holds, and that
	// is forgotten once an admin had it wiped or kept.
	AnnUnwipedDisk = prefix + "unwiped-disk"
	// AnnHeld is set on the PV of a returned unwiped disk, with the time it
	// was held: the disk is neither published for claims nor wiped until an
	// admin sets AnnAdminAction. LabelHeld ("true") selects such PVs.
	AnnHeld   = prefix + "held-since"
	LabelHeld = prefix + "held"
	// AnnAdminAction is set by an admin on a held PV, or on a released PV
	// that records no disk identity: AdminActionWipe wipes the disk at its
	// path now (checked against the identity recorded), AdminActionKeep
	// (held PVs only) publishes the held disk again with its data.
	AnnAdminAction  = prefix + "admin-action"
	AdminActionWipe = "wipe"
	AdminActionKeep = "keep"
	// AnnClassOwner, on a StorageClass, names the installation that
	// publishes its local PVs: "<namespace>/<provisioner name>". Another
	// master configured for the class refuses to act on it.
	AnnClassOwner = prefix + "owner"
	// LabelDiskReplaced ("true") selects the PVs marked with AnnDiskReplaced.
	LabelDiskReplaced = prefix + "disk-replaced"
	// AnnDiskFound, next to AnnDiskReplaced, is the identity of the disk
	// the PV's path leads to instead of its own, so that every message
	// can name whose disk it is.
	AnnDiskFound = prefix + "disk-found"

	// AnnNodeGone is set on a bound PV whose Node was deleted and did not
	// come back within its class's releaseClaimsOfDeletedNodesAfter, with
	// the time the deletion was seen, before its claim is deleted. Such a PV
	// is dropped without a wipe (its machine is gone) and never gets a
	// cleanup Job.
	AnnNodeGone = prefix + "node-gone-since"

	// CleanupIdentityMismatch starts the termination message of a cleanup
	// Job that found another machine or another disk than its PV's, and so
	// wiped nothing; its container exits with CleanupIdentityMismatchCode.
	CleanupIdentityMismatch = "identity-mismatch: "
	// CleanupIdentityMismatchCode is the exit code of that container.
	CleanupIdentityMismatchCode = 3
	// CleanupMismatchMachine and CleanupMismatchDisk say what differed:
	// the termination message is CleanupIdentityMismatch, one of them, and
	// ": recorded <what the PV recorded>, found <what the node has>".
	CleanupMismatchMachine = "machine"
	CleanupMismatchDisk    = "disk"

	// AnnProvisionedBy is the standard annotation naming a PV's provisioner.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"

	// FinalizerCleanupLock keeps a cleanup Job, and so the lock it stands
	// for, until the master has acted on its result.
	FinalizerCleanupLock = prefix + "cleanup-lock"
	// FinalizerPVProtection keeps a used PV until its disk is wiped.
	FinalizerPVProtection = prefix + "cleanup-protection"

	// RoleDiscovery and RoleCleanup are the values of LabelRole.
	RoleDiscovery = "discovery"
	RoleCleanup   = "cleanup"
)

// IsFinished reports whether a Job completed or failed, and which.
func IsFinished(j *batchv1.Job) (finished, succeeded bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != v1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true
		case batchv1.JobFailed:
			return true, false
		}
	}
	return false, false
}

// FinishTime returns when a finished Job reached its final condition.
func FinishTime(j *batchv1.Job) (t batchv1.JobCondition, ok bool) {
	for _, c := range j.Status.Conditions {
		if c.Status == v1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return c, true
		}
	}
	return batchv1.JobCondition{}, false
}

// Attempt returns a cleanup Job's attempt number, 0 if unknown.
func Attempt(j *batchv1.Job) int {
	n, err := strconv.Atoi(j.Annotations[AnnAttempt])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// NextAttempt is the attempt number of a volume's next cleanup Job after
// the given ones.
func NextAttempt(js []*batchv1.Job) int {
	n := 0
	for _, j := range js {
		n = max(n, Attempt(j))
	}
	return n + 1
}
