package pvops

import v1 "k8s.io/api/core/v1"

// Truncate cuts s to n bytes and marks the cut with "...", for the texts
// of the master's Events and claim conditions.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Unclaimed reports whether no claim ever used a PV: it has no claimRef
// and is Available (or has no phase yet). Such a PV holds no data and is
// deleted with exact preconditions, so that one bound meanwhile stays.
func Unclaimed(pv *v1.PersistentVolume) bool {
	return pv.Spec.ClaimRef == nil && (pv.Status.Phase == v1.VolumeAvailable || pv.Status.Phase == v1.VolumePending || pv.Status.Phase == "")
}

// Cleanable reports whether a PV's disk must be wiped before reuse: it is
// Released or Failed, by a claim it still names, under the Delete reclaim
// policy. A Released PV without a claimRef is on its way to Available (an
// admin let it go with its data) and is never wiped.
func Cleanable(pv *v1.PersistentVolume) bool {
	return pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete && pv.Spec.ClaimRef != nil &&
		(pv.Status.Phase == v1.VolumeReleased || pv.Status.Phase == v1.VolumeFailed)
}
