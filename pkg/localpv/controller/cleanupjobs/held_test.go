package cleanupjobs_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

// TestKeepForgetsOnlyItsDisk (later review): two PVs of one node recorded
// as the same legacy file handle (the root of every ext4 file system has
// it) are both remembered when they are dropped, and an admin's keep of
// one returned disk forgets that disk alone. With entries keyed by node
// and identity only, the second was never remembered and the keep forgot
// both.
func TestKeepForgetsOnlyItsDisk(t *testing.T) {
	legacy := identity.FileHandle(1, []byte{2, 0, 0, 0, 0, 0, 0, 0})
	tests := []struct {
		name    string
		keep    string // the path of the held PV the admin keeps
		remains string
	}{
		{name: "keep vol1, vol2 is still remembered", keep: "/mnt/fast/vol1", remains: "/mnt/fast/vol2"},
		{name: "keep vol2, vol1 is still remembered", keep: "/mnt/fast/vol2", remains: "/mnt/fast/vol1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			held := releasedPV()
			held.Annotations[jobs.AnnHostPath], held.Spec.Local.Path = tc.keep, tc.keep
			h := newHarness(t)
			for _, path := range []string{"/mnt/fast/vol1", "/mnt/fast/vol2"} {
				dropped := releasedPV()
				dropped.Name = "dropped-" + path[len(path)-4:]
				dropped.Annotations[jobs.AnnHostPath], dropped.Annotations[jobs.AnnDiskID] = path, string(legacy)
				if err := h.memory().Remember(h.ctx, dropped, "cleanup found another disk"); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := h.memory().Load(h.ctx); err != nil || len(got) != 2 {
				t.Fatalf("remembered %v (%v), want both disks", got, err)
			}
			pv, _ := pvstate.Hold(unwiped.Key("a", tc.keep, legacy)).Preview(held, start)
			pv.Annotations[jobs.AnnAdminAction] = jobs.AdminActionKeep
			if _, err := h.kube.CoreV1().PersistentVolumes().Create(h.ctx, pv, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			h.sync()
			if got, _ := h.PV(volID); got == nil || pvstate.Held(got) {
				t.Fatalf("the kept PV is still held: %v", got)
			}
			got, err := h.memory().Load(h.ctx)
			if d, ok := got[unwiped.Key("a", tc.remains, legacy)]; err != nil || len(got) != 1 || !ok || d.Path != tc.remains {
				t.Errorf("remembered %v (%v), want the disk at %s alone", got, err, tc.remains)
			}
		})
	}
}
