package pvstate_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

func pvOn(name, node, disk string, anns map[string]string) *v1.PersistentVolume {
	a := map[string]string{jobs.AnnNode: node, jobs.AnnHostPath: "/mnt/fast/" + name, jobs.AnnDiskID: disk}
	for k, v := range anns {
		a[k] = v
	}
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a}}
}

// TestCause: the cause of a marked PV tells a disk of another PV of its
// node, an unknown disk and a changed machine apart, and never suggests
// editing annotations.
func TestCause(t *testing.T) {
	swapped := map[string]string{jobs.AnnDiskReplaced: earlier, jobs.AnnDiskFound: "wwn:naa.b"}
	others := []*v1.PersistentVolume{pvOn("pv-b", "a", "wwn:naa.b", nil), pvOn("pv-c", "other-node", "wwn:naa.c", nil)}
	tests := []struct {
		name    string
		pv      *v1.PersistentVolume
		want    []string
		notWant []string
	}{
		{name: "the disk of another PV of the node", pv: pvOn("pv-a", "a", "wwn:naa.a", swapped),
			want:    []string{"/mnt/fast/pv-a leads to the disk of PV pv-b (wwn:naa.b), not to its own (wwn:naa.a)", "restore the mounts"},
			notWant: []string{"machine"}},
		{name: "a disk of a PV on another node is unknown here", pv: pvOn("pv-a", "a", "wwn:naa.a",
			map[string]string{jobs.AnnDiskReplaced: earlier, jobs.AnnDiskFound: "wwn:naa.c"}),
			want: []string{"a disk that no PV records (wwn:naa.c)", "put its disk back"}, notWant: []string{"pv-c", "machine"}},
		{name: "a mark without the disk found is an unknown disk", pv: pvOn("pv-a", "a", "wwn:naa.a",
			map[string]string{jobs.AnnDiskReplaced: earlier}), want: []string{"no PV records"}},
		{name: "a changed machine", pv: pvOn("pv-a", "a", "wwn:naa.a", map[string]string{jobs.AnnMachineReplaced: earlier,
			jobs.AnnMachineID: "m1"}), want: []string{"node a now runs on another machine", `machineID "m1"`, "delete the claim"}},
		{name: "an unmarked PV has no cause", pv: pvOn("pv-a", "a", "wwn:naa.a", nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pvstate.Cause(tc.pv, pvstate.HolderAmong(tc.pv, append(others, tc.pv)))
			if (got == "") != (len(tc.want) == 0) {
				t.Fatalf("cause = %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("cause %q does not hold %q", got, w)
				}
			}
			for _, w := range append(tc.notWant, "annotation", "accept") {
				if strings.Contains(got, w) {
					t.Errorf("cause %q holds %q", got, w)
				}
			}
		})
	}
}
