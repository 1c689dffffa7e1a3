package machine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops/pvopstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func node(id, uuid string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{MachineID: id, SystemUUID: uuid}}}
}

// pv is a PV of node a recorded for machine id/uuid, in phase; claimed
// gives it a claimRef.
func pv(id, uuid string, phase v1.PersistentVolumePhase, claimed bool) *v1.PersistentVolume {
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", UID: "pv-uid",
		Labels: map[string]string{}, Annotations: map[string]string{jobs.AnnNode: "a"}},
		Status: v1.PersistentVolumeStatus{Phase: phase}}
	machine.Set(p, machine.Identity{ID: id, UUID: uuid})
	if claimed {
		p.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}
	}
	return p
}

func markedPV(id, uuid string) *v1.PersistentVolume {
	p := pv(id, uuid, v1.VolumeBound, true)
	p.Annotations[jobs.AnnMachineReplaced] = "2025-12-31T00:00:00Z"
	p.Labels[jobs.LabelMachineReplaced] = "true"
	return p
}

type pvList []*v1.PersistentVolume

func (l pvList) OnNode(string) ([]*v1.PersistentVolume, error) { return l, nil }

type checkCase struct {
	name      string
	node      *v1.Node
	pv        *v1.PersistentVolume
	blockPods bool
	// wantOps are the executor's calls.
	wantOps []string
	// wantPV checks the PV written to the apiserver; nil means none was.
	wantPV func(*v1.PersistentVolume) bool
	// wantMarks is whether the blocked claims are asked to be written.
	wantMarks bool
	// wantEvent is a substring of an Event; empty means none.
	wantEvent string
}

func TestCheck(t *testing.T) {
	deleting := pv("m1", "u1", v1.VolumeBound, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: start}
	tests := []checkCase{
		{name: "a node that reports no identity checks nothing", node: node("", ""), pv: pv("m1", "u1", v1.VolumeAvailable, false)},
		{name: "a PV of the node's machine is left alone", node: node("m1", "u1"), pv: pv("m1", "u1", v1.VolumeBound, true)},
		{name: "a PV recording part of the same machine is left alone", node: node("m1", "u1"), pv: pv("", "u1", v1.VolumeBound, true)},
		{name: "a PV being deleted is left alone", node: node("m2", "u2"), pv: deleting},
		{name: "a PV that records no machine is adopted", node: node("m1", "u1"), pv: pv("", "", v1.VolumeBound, true),
			wantPV: func(p *v1.PersistentVolume) bool {
				return machine.Recorded(p) == machine.Identity{ID: "m1", UUID: "u1"}
			}},
		{name: "an unused PV of another machine is deleted", node: node("m2", "u2"), pv: pv("m1", "u1", v1.VolumeAvailable, false),
			wantOps: []string{"delete pv-1 exact=true reason=machine_replaced"}, wantEvent: "deleting the unused PV"},
		{name: "a bound PV of another machine is marked and its claim blocked", node: node("m2", "u2"), pv: pv("m1", "u1", v1.VolumeBound, true),
			blockPods: true, wantOps: []string{"warnClaim pv-1 MachineReplaced DataLoss"}, wantMarks: true,
			wantEvent: "new pods using its claim are refused",
			wantPV: func(p *v1.PersistentVolume) bool {
				return machine.Marked(p) && p.Labels[jobs.LabelMachineReplaced] == "true" && p.Annotations[jobs.AnnMachineReplaced] == "2026-01-01T00:00:00Z"
			}},
		{name: "under Warn a bound PV is marked, its claim not refused", node: node("m2", "u2"), pv: pv("m1", "u1", v1.VolumeBound, true),
			wantOps: []string{"warnClaim pv-1 MachineReplaced DataLoss"}, wantMarks: true, wantEvent: "the PV is kept",
			wantPV: machine.Marked},
		{name: "a released PV of another machine is marked, not wiped", node: node("m2", "u2"), pv: pv("m1", "u1", v1.VolumeReleased, true),
			wantOps: []string{"warnClaim pv-1 MachineReplaced DataLoss"}, wantMarks: true, wantEvent: "the PV is kept",
			wantPV: machine.Marked},
		{name: "a marked PV is not marked again", node: node("m2", "u2"), pv: markedPV("m1", "u1"), wantEvent: "Node now runs on another machine"},
		{name: "a marked PV whose machine is back is unmarked", node: node("m1", "u1"), pv: markedPV("m1", "u1"),
			wantOps: []string{"clearClaimHealth pv-1"}, wantMarks: true, wantEvent: "MachineMatched",
			wantPV: func(p *v1.PersistentVolume) bool {
				return !machine.Marked(p) && p.Labels[jobs.LabelMachineReplaced] == ""
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runCheckCase(t, tc) })
	}
}

func runCheckCase(t *testing.T, tc checkCase) {
	_, ctx := ktesting.NewTestContext(t)
	kube := fake.NewClientset(tc.pv)
	kube.ClearActions()
	ops := &pvopstest.Fake{}
	recorder := record.NewFakeRecorder(10)
	marks := 0
	c := machine.New(machine.Config{PVs: pvList{tc.pv}, Marks: pvstate.New(kube.CoreV1(), testingclock.NewFakeClock(start)), Ops: ops, Recorder: recorder,
		BlockPods: tc.blockPods, MarksChanged: func() { marks++ }})
	if err := c.Check(ctx, tc.node); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got := ops.Calls(); !slices.Equal(got, tc.wantOps) {
		t.Errorf("executor calls %q, want %q", got, tc.wantOps)
	}
	written := len(kube.Actions()) > 0
	if written != (tc.wantPV != nil) {
		t.Fatalf("PV written = %t, want %t: %v", written, tc.wantPV != nil, kube.Actions())
	}
	if tc.wantPV != nil {
		got, _ := kube.CoreV1().PersistentVolumes().Get(ctx, "pv-1", metav1.GetOptions{})
		if !tc.wantPV(got) {
			t.Errorf("PV written as %v %v", got.Labels, got.Annotations)
		}
	}
	if (marks > 0) != tc.wantMarks {
		t.Errorf("blocked claims asked for %d times, want %t", marks, tc.wantMarks)
	}
	var evs []string
	for len(recorder.Events) > 0 {
		evs = append(evs, <-recorder.Events)
	}
	if tc.wantEvent == "" && len(evs) > 0 || tc.wantEvent != "" && !strings.Contains(strings.Join(evs, "\n"), tc.wantEvent) {
		t.Errorf("Events %q, want one with %q", evs, tc.wantEvent)
	}
	if !tc.blockPods && strings.Contains(strings.Join(evs, "\n"), "refused") {
		t.Errorf("a Warn Event says pods are refused: %q", evs)
	}
}

// TestReplacementReportedOnce: a node's new machine is counted and reported
// on the Node once per machine, and again after the node was forgotten.
func TestReplacementReportedOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	p := markedPV("m1", "u1")
	recorder := record.NewFakeRecorder(10)
	c := machine.New(machine.Config{PVs: pvList{p}, Marks: pvstate.New(fake.NewClientset(p).CoreV1(), testingclock.NewFakeClock(start)), Ops: &pvopstest.Fake{},
		Recorder: recorder, MarksChanged: func() {}})
	count := func() int {
		n := 0
		for len(recorder.Events) > 0 {
			if strings.Contains(<-recorder.Events, "Node now runs on another machine") {
				n++
			}
		}
		return n
	}
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{name: "first sight", do: func() { _ = c.Check(ctx, node("m2", "u2")) }, want: 1},
		{name: "the same machine again", do: func() { _ = c.Check(ctx, node("m2", "u2")) }, want: 0},
		{name: "a third machine", do: func() { _ = c.Check(ctx, node("m3", "u3")) }, want: 1},
		{name: "after the node was forgotten", do: func() { c.Forget("a"); _ = c.Check(ctx, node("m3", "u3")) }, want: 1},
	}
	for _, s := range steps {
		s.do()
		if n := count(); n != s.want {
			t.Errorf("%s: %d Node Events, want %d", s.name, n, s.want)
		}
	}
}
