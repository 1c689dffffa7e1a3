package pvops_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name, in, want string
		n              int
	}{
		{name: "short", in: "abc", n: 3, want: "abc"},
		{name: "cut and marked", in: "abcdef", n: 3, want: "abc..."},
		{name: "empty", in: "", n: 0, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pvops.Truncate(tc.in, tc.n); got != tc.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

func TestUnclaimed(t *testing.T) {
	ref := &v1.ObjectReference{Name: "claim"}
	tests := []struct {
		name  string
		phase v1.PersistentVolumePhase
		ref   *v1.ObjectReference
		want  bool
	}{
		{name: "new", want: true},
		{name: "available", phase: v1.VolumeAvailable, want: true},
		{name: "pending", phase: v1.VolumePending, want: true},
		{name: "available with a claimRef being bound", phase: v1.VolumeAvailable, ref: ref},
		{name: "bound", phase: v1.VolumeBound, ref: ref},
		{name: "released", phase: v1.VolumeReleased, ref: ref},
		{name: "failed without a claimRef", phase: v1.VolumeFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{ClaimRef: tc.ref}, Status: v1.PersistentVolumeStatus{Phase: tc.phase}}
			if got := pvops.Unclaimed(pv); got != tc.want {
				t.Errorf("Unclaimed = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestCleanable(t *testing.T) {
	tests := []struct {
		name   string
		policy v1.PersistentVolumeReclaimPolicy
		phase  v1.PersistentVolumePhase
		noRef  bool
		want   bool
	}{
		{name: "released Delete", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeReleased, want: true},
		{name: "failed Delete", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeFailed, want: true},
		{name: "bound Delete", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeBound},
		{name: "released Retain", policy: v1.PersistentVolumeReclaimRetain, phase: v1.VolumeReleased},
		{name: "released without a claimRef: let go by an admin, on its way to Available", policy: v1.PersistentVolumeReclaimDelete,
			phase: v1.VolumeReleased, noRef: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: tc.policy},
				Status: v1.PersistentVolumeStatus{Phase: tc.phase}}
			if !tc.noRef {
				pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}
			}
			if got := pvops.Cleanable(pv); got != tc.want {
				t.Errorf("Cleanable = %t, want %t", got, tc.want)
			}
		})
	}
}
