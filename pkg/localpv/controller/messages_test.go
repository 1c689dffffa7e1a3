package controller

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// bindTo binds a PV to default/<claim>, which it creates.
func (f *fixture) bindTo(name, claim string) {
	f.t.Helper()
	uid := types.UID(claim + "-uid")
	f.ensureClaim("default", claim, uid)
	pv := f.pv(name)
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: claim, UID: uid}
	if _, err := f.kube.CoreV1().PersistentVolumes().Update(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	pv = f.pv(name)
	pv.Status.Phase = v1.VolumeBound
	if _, err := f.kube.CoreV1().PersistentVolumes().UpdateStatus(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// twoDirReport reports vol0 and vol1 of class fast with identities.
func twoDirReport(node string, vol0, vol1 identity.ID) *report.Report {
	r := fsReport(node, "vol0", "vol1")
	r.Classes[0].Volumes[0].ID, r.Classes[0].Volumes[1].ID = vol0, vol1
	return r
}

// wrongFixes are texts no message may hold: they would have an admin
// accept a disk that is not proven to be the PV's.
var wrongFixes = []string{"annotation", jobs.AnnMachineID, jobs.AnnSystemUUID, "to accept"}

func checkMessage(t *testing.T, what, msg string, want []string, notWant ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s %q does not name %q", what, msg, w)
		}
	}
	for _, w := range append(notWant, wrongFixes...) {
		if strings.Contains(msg, w) {
			t.Errorf("%s %q holds %q", what, msg, w)
		}
	}
}

// TestMessagesNameTheCause: the Events and the admission policy's refusal
// tell apart the disks of two PVs mounted at each other's paths (each names
// the other PV and the fix, restoring the mounts, and not the machine), an
// unknown disk at a PV's path, and a changed machine; none suggests editing
// annotations to accept a disk.
func TestMessagesNameTheCause(t *testing.T) {
	tests := []struct {
		name string
		// vol0 and vol1 are what the paths lead to after the change; a
		// machine change runs the node on m2 instead.
		vol0, vol1 identity.ID
		machine    bool
		// want are the texts each bound PV's Event and refusal hold, by
		// claim; notWant those they must not.
		want    map[string][]string
		notWant []string
	}{
		{name: "two PVs' disks swapped on one node", vol0: diskB, vol1: diskA,
			want: map[string][]string{"c0": {"disk of PV " + pvName("vol1"), "restore the mounts"},
				"c1": {"disk of PV " + pvName("vol0"), "restore the mounts"}},
			notWant: []string{"machine"}},
		{name: "an unknown disk at a PV's path", vol0: diskC, vol1: diskB,
			want:    map[string][]string{"c0": {"no PV records", string(diskC), "put its disk back"}},
			notWant: []string{"machine", "PV " + pvName("vol1")}},
		{name: "a changed machine", vol0: diskA, vol1: diskB, machine: true,
			want: map[string][]string{"c0": {"another machine", "restore the old machine or delete the claim"},
				"c1": {"another machine"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", twoDirReport("a", diskA, diskB))
			f.bindTo(pvName("vol0"), "c0")
			f.bindTo(pvName("vol1"), "c1")
			f.events()
			if tc.machine {
				f.setMachine("a", "m2", "u2")
				f.sync(nodeKey("a"))
			} else {
				f.discoverRaw("a", twoDirReport("a", tc.vol0, tc.vol1))
			}
			evs := f.events()
			causes := f.causesNow()
			if len(causes) != len(tc.want) {
				t.Fatalf("blocked claims %v, want those of %v", causes, tc.want)
			}
			for claim, want := range tc.want {
				vol := "vol" + claim[1:]
				checkMessage(t, "refusal of "+claim, causes[blockedclaims.Key("default", claim)], append(want, "PV "+pvName(vol)), tc.notWant...)
				ev := eventOn(evs, "/mnt/fast/"+vol)
				checkMessage(t, "Event of "+vol, ev, want, tc.notWant...)
			}
			if got := f.pvNames(); len(got) != 2 {
				t.Errorf("PVs %v, want the two kept", got)
			}
		})
	}
}

// diskC is a third disk, which no PV records.
var diskC = identity.FS("0f0e0d0c-0b0a-4908-8706-050403020100", 1, []byte{2, 0, 0, 0})

func pvName(vol string) string {
	return naming.PVNameForID(naming.MachineVolumeID("a", "/mnt/fast/"+vol, "m1", "u1"))
}

// causesNow writes the blocked claims and returns them with their causes.
func (f *fixture) causesNow() map[string]string {
	f.t.Helper()
	f.sync(blockedClaimsKey)
	return f.policyCauses()
}

// eventOn returns the Warning Event that marks the PV of a path: the
// FakeRecorder does not say which object an Event is on, but each names its
// PV's path.
func eventOn(evs []string, path string) string {
	for _, e := range evs {
		if strings.HasPrefix(e, "Warning") && (strings.Contains(e, "DiskReplaced") || strings.Contains(e, "MachineReplaced")) &&
			strings.Contains(e, path+" ") {
			return e
		}
	}
	return ""
}
