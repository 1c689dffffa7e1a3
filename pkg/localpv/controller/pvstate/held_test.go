package pvstate_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// TestHoldAndKeep: a held PV is bound to a claim that never exists under
// the Delete policy, with its unwiped key; the admin's keep lets it go of
// all that, and only of a held PV's own claim.
func TestHoldAndKeep(t *testing.T) {
	tests := []struct {
		name      string
		pv        func() *v1.PersistentVolume
		t         pvstate.Transition
		wantWrite bool
		wantHeld  bool
		wantRef   string
	}{
		{name: "hold a new PV", t: pvstate.Hold("disk-1"), wantWrite: true, wantHeld: true, wantRef: pvstate.HeldClaimUID,
			pv: func() *v1.PersistentVolume {
				pv := testPV(marks{})
				pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
				return pv
			}},
		{name: "hold a held PV again writes nothing", t: pvstate.Hold("disk-2"), wantHeld: true, wantRef: pvstate.HeldClaimUID,
			pv: func() *v1.PersistentVolume { p, _ := pvstate.Hold("disk-1").Preview(testPV(marks{}), now); return p }},
		{name: "keep a held PV", t: pvstate.KeepHeld, wantWrite: true,
			pv: func() *v1.PersistentVolume {
				p, _ := pvstate.Hold("disk-1").Preview(testPV(marks{}), now)
				p.Annotations[jobs.AnnAdminAction] = jobs.AdminActionKeep
				return p
			}},
		{name: "keep on a PV that is not held writes nothing", t: pvstate.KeepHeld, wantRef: "claim-uid",
			pv: func() *v1.PersistentVolume {
				p := testPV(marks{})
				p.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}
				return p
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, wrote := tc.t.Preview(tc.pv(), now)
			if wrote != tc.wantWrite || pvstate.Held(got) != tc.wantHeld {
				t.Fatalf("wrote %v, held %v; want %v, %v", wrote, pvstate.Held(got), tc.wantWrite, tc.wantHeld)
			}
			ref := ""
			if got.Spec.ClaimRef != nil {
				ref = string(got.Spec.ClaimRef.UID)
			}
			if ref != tc.wantRef {
				t.Errorf("claimRef UID %q, want %q", ref, tc.wantRef)
			}
			if tc.wantHeld && (got.Labels[jobs.LabelHeld] != "true" || got.Annotations[jobs.AnnUnwipedDisk] != "disk-1" ||
				got.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete) {
				t.Errorf("held PV %v", got)
			}
			if !tc.wantHeld && (got.Labels[jobs.LabelHeld] != "" || got.Annotations[jobs.AnnUnwipedDisk] != "" ||
				got.Annotations[jobs.AnnAdminAction] != "") {
				t.Errorf("kept PV still carries the hold: %v", got.ObjectMeta)
			}
		})
	}
}
