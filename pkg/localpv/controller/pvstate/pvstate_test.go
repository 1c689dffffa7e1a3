package pvstate_test

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

var (
	now     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	nowText = "2026-01-02T03:04:05Z"
	earlier = "2025-12-31T00:00:00Z"
)

type marks struct{ anns, labels map[string]string }

func testPV(m marks) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Annotations: maps.Clone(m.anns), Labels: maps.Clone(m.labels)}}
}

// TestTransitions: each named transition, from the states it starts in, to
// the state it leads to; one that finds its end state writes nothing.
func TestTransitions(t *testing.T) {
	gone := time.Date(2025, 12, 30, 1, 2, 3, 0, time.UTC)
	tests := []struct {
		name  string
		t     pvstate.Transition
		from  marks
		want  marks
		write bool
	}{
		{name: "mark missing", t: pvstate.MarkMissing,
			want: marks{anns: map[string]string{jobs.AnnVolumeMissing: nowText}}, write: true},
		{name: "mark missing keeps the first time", t: pvstate.MarkMissing,
			from: marks{anns: map[string]string{jobs.AnnVolumeMissing: earlier}}, want: marks{anns: map[string]string{jobs.AnnVolumeMissing: earlier}}},
		{name: "clear missing", t: pvstate.ClearMissing, from: marks{anns: map[string]string{jobs.AnnVolumeMissing: earlier}}, write: true},
		{name: "clear missing of an unmarked PV", t: pvstate.ClearMissing},
		{name: "mark disk-replaced with the disk found", t: pvstate.MarkDiskReplaced("wwn:naa.2"), write: true,
			want: marks{anns: map[string]string{jobs.AnnDiskReplaced: nowText, jobs.AnnDiskFound: "wwn:naa.2"},
				labels: map[string]string{jobs.LabelDiskReplaced: "true"}}},
		{name: "mark disk-replaced again keeps the time, updates the disk found", t: pvstate.MarkDiskReplaced("wwn:naa.3"), write: true,
			from: marks{anns: map[string]string{jobs.AnnDiskReplaced: earlier, jobs.AnnDiskFound: "wwn:naa.2"},
				labels: map[string]string{jobs.LabelDiskReplaced: "true"}},
			want: marks{anns: map[string]string{jobs.AnnDiskReplaced: earlier, jobs.AnnDiskFound: "wwn:naa.3"},
				labels: map[string]string{jobs.LabelDiskReplaced: "true"}}},
		{name: "mark disk-replaced with the same disk writes nothing", t: pvstate.MarkDiskReplaced("wwn:naa.2"),
			from: marks{anns: map[string]string{jobs.AnnDiskReplaced: earlier, jobs.AnnDiskFound: "wwn:naa.2"},
				labels: map[string]string{jobs.LabelDiskReplaced: "true"}},
			want: marks{anns: map[string]string{jobs.AnnDiskReplaced: earlier, jobs.AnnDiskFound: "wwn:naa.2"},
				labels: map[string]string{jobs.LabelDiskReplaced: "true"}}},
		{name: "clear disk-replaced", t: pvstate.ClearDiskReplaced, write: true,
			from: marks{anns: map[string]string{jobs.AnnDiskReplaced: earlier, jobs.AnnDiskFound: "wwn:naa.2"},
				labels: map[string]string{jobs.LabelDiskReplaced: "true"}}},
		{name: "clear disk-replaced drops a label left alone", t: pvstate.ClearDiskReplaced, write: true,
			from: marks{labels: map[string]string{jobs.LabelDiskReplaced: "true"}}},
		{name: "mark machine-replaced", t: pvstate.MarkMachineReplaced, write: true,
			want: marks{anns: map[string]string{jobs.AnnMachineReplaced: nowText}, labels: map[string]string{jobs.LabelMachineReplaced: "true"}}},
		{name: "clear machine-replaced", t: pvstate.ClearMachineReplaced, write: true,
			from: marks{anns: map[string]string{jobs.AnnMachineReplaced: earlier}, labels: map[string]string{jobs.LabelMachineReplaced: "true"}}},
		{name: "mark node-gone with the deletion's time", t: pvstate.MarkNodeGone(gone), write: true,
			want: marks{anns: map[string]string{jobs.AnnNodeGone: "2025-12-30T01:02:03Z"}}},
		{name: "clear node-gone", t: pvstate.ClearNodeGone, write: true, from: marks{anns: map[string]string{jobs.AnnNodeGone: earlier}}},
		{name: "stamp the disk of a PV without one", t: pvstate.StampDisk("wwn:naa.1"), write: true,
			want: marks{anns: map[string]string{jobs.AnnDiskID: "wwn:naa.1"}}},
		{name: "a recorded disk is never overwritten", t: pvstate.StampDisk("wwn:naa.2"),
			from: marks{anns: map[string]string{jobs.AnnDiskID: "wwn:naa.1"}}, want: marks{anns: map[string]string{jobs.AnnDiskID: "wwn:naa.1"}}},
		{name: "record the machine", t: pvstate.RecordMachine("m1", "u1"), write: true,
			want: marks{anns: map[string]string{jobs.AnnMachineID: "m1", jobs.AnnSystemUUID: "u1"}}},
		{name: "record a machine without a UUID", t: pvstate.RecordMachine("m1", ""), write: true,
			want: marks{anns: map[string]string{jobs.AnnMachineID: "m1"}}},
		{name: "hand to the new machine clears the mark", t: pvstate.AdoptMachine("m2", "u2"), write: true,
			from: marks{anns: map[string]string{jobs.AnnMachineID: "m1", jobs.AnnSystemUUID: "u1", jobs.AnnMachineReplaced: earlier},
				labels: map[string]string{jobs.LabelMachineReplaced: "true"}},
			want: marks{anns: map[string]string{jobs.AnnMachineID: "m2", jobs.AnnSystemUUID: "u2"}}},
		{name: "hand to the same machine writes nothing", t: pvstate.AdoptMachine("m1", "u1"),
			from: marks{anns: map[string]string{jobs.AnnMachineID: "m1", jobs.AnnSystemUUID: "u1"}},
			want: marks{anns: map[string]string{jobs.AnnMachineID: "m1", jobs.AnnSystemUUID: "u1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pv := testPV(tc.from)
			kube := fake.NewClientset(pv)
			w := pvstate.New(kube.CoreV1(), testingclock.NewFakeClock(now))
			got, wrote, err := w.Apply(ctx, pv, tc.t)
			if err != nil {
				t.Fatal(err)
			}
			writes := 0
			for _, a := range kube.Actions() {
				if a.GetVerb() == "update" {
					writes++
				}
			}
			if wrote != tc.write || writes != map[bool]int{true: 1}[tc.write] {
				t.Fatalf("wrote = %v with %d updates, want %v", wrote, writes, tc.write)
			}
			if !maps.Equal(got.Annotations, tc.want.anns) && len(got.Annotations)+len(tc.want.anns) > 0 {
				t.Errorf("annotations = %v, want %v", got.Annotations, tc.want.anns)
			}
			if !maps.Equal(got.Labels, tc.want.labels) && len(got.Labels)+len(tc.want.labels) > 0 {
				t.Errorf("labels = %v, want %v", got.Labels, tc.want.labels)
			}
			if !maps.Equal(pv.Annotations, tc.from.anns) && len(pv.Annotations)+len(tc.from.anns) > 0 {
				t.Errorf("the given PV was changed: %v", pv.Annotations)
			}
		})
	}
}

// TestApplyFailureNamesTheTransition: a failed write is an error that names
// the transition and the PV, and the given PV is returned.
func TestApplyFailureNamesTheTransition(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pv := testPV(marks{})
	kube := fake.NewClientset(pv)
	kube.PrependReactor("update", "persistentvolumes", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	got, wrote, err := pvstate.New(kube.CoreV1(), testingclock.NewFakeClock(now)).Apply(ctx, pv, pvstate.MarkMissing)
	if err == nil || !strings.Contains(err.Error(), "failed to mark missing PV pv-1") || wrote || got != pv {
		t.Fatalf("Apply = %v, %v, %v", got, wrote, err)
	}
}
