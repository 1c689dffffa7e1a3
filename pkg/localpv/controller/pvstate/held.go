package pvstate

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// The claim a held PV is bound to: it never exists under this UID, so the
// PV stays Released and no claim can bind it.
const (
	HeldClaimNamespace = "localpv-held"
	HeldClaimName      = "held"
	HeldClaimUID       = "localpv.nodeplug.io/held"
)

// Held reports whether a PV holds a returned unwiped disk for an admin.
func Held(pv *v1.PersistentVolume) bool {
	_, ok := pv.Annotations[jobs.AnnHeld]
	return ok
}

// AdminAction returns what an admin asked for on a PV (jobs.AdminActionWipe
// or jobs.AdminActionKeep), or "".
func AdminAction(pv *v1.PersistentVolume) string {
	switch a := pv.Annotations[jobs.AnnAdminAction]; a {
	case jobs.AdminActionWipe, jobs.AdminActionKeep:
		return a
	}
	return ""
}

// Hold marks a new PV of a returned unwiped disk, remembered under key, as
// held: bound to a claim that never exists, so that it stays Released and
// unclaimable, under the Delete reclaim policy, so that the admin's wipe
// is the usual cleanup. Apply it with Preview before the PV is created.
func Hold(key string) Transition {
	return Transition{Name: "hold", apply: func(pv *v1.PersistentVolume, now time.Time) bool {
		if Held(pv) {
			return false
		}
		pv.Annotations[jobs.AnnHeld] = Stamp(now)
		pv.Annotations[jobs.AnnUnwipedDisk] = key
		pv.Labels[jobs.LabelHeld] = "true"
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: HeldClaimNamespace, Name: HeldClaimName, UID: HeldClaimUID}
		pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
		return true
	}}
}

// KeepHeld publishes a held PV again with its data, as an admin asked: the
// marks, the admin's action and the held claim go, so the PV becomes
// Available to claims.
var KeepHeld = Transition{Name: "keep the held disk of", apply: func(pv *v1.PersistentVolume, _ time.Time) bool {
	if !Held(pv) {
		return false
	}
	delete(pv.Annotations, jobs.AnnHeld)
	delete(pv.Annotations, jobs.AnnUnwipedDisk)
	delete(pv.Annotations, jobs.AnnAdminAction)
	delete(pv.Labels, jobs.LabelHeld)
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID == HeldClaimUID {
		pv.Spec.ClaimRef = nil
	}
	return true
}}
