package controller

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

func machineNode(name, machineID, systemUUID string) *v1.Node {
	n := newNode(name, nil)
	n.Status.NodeInfo.MachineID, n.Status.NodeInfo.SystemUUID = machineID, systemUUID
	return n
}

// setMachine gives a node another machine identity, as a new machine that
// registers under the name does.
func (f *fixture) setMachine(name, machineID, systemUUID string) {
	f.t.Helper()
	n, err := f.kube.CoreV1().Nodes().Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	n.Status.NodeInfo.MachineID, n.Status.NodeInfo.SystemUUID = machineID, systemUUID
	if _, err := f.kube.CoreV1().Nodes().UpdateStatus(f.t.Context(), n, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

func (f *fixture) blockedClaims() map[string]string {
	f.t.Helper()
	f.sync(blockedClaimsKey)
	return f.policyClaims()
}

func TestPVNamesAndMachineAnnotations(t *testing.T) {
	tests := []struct {
		name                  string
		machineID, systemUUID string
		wantName              string
	}{
		{name: "a node with an identity", machineID: "m1", systemUUID: "u1",
			wantName: naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))},
		{name: "a node with only a system UUID", systemUUID: "u1",
			wantName: naming.PVNameForID(naming.MachineVolumeID("a", vol1, "", "u1"))},
		{name: "a node with no identity keeps the name of earlier releases", wantName: naming.PVName("a", vol1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, machineNode("a", tc.machineID, tc.systemUUID), newClass("fast", v1.PersistentVolumeReclaimDelete))
			f.discover("a", fsReport("a", "vol1"))
			pv := f.pv(tc.wantName)
			if pv == nil {
				t.Fatalf("no PV %s", tc.wantName)
			}
			if pv.Annotations[jobs.AnnMachineID] != tc.machineID || pv.Annotations[jobs.AnnSystemUUID] != tc.systemUUID {
				t.Errorf("PV records machine %q/%q, want %q/%q", pv.Annotations[jobs.AnnMachineID],
					pv.Annotations[jobs.AnnSystemUUID], tc.machineID, tc.systemUUID)
			}
			if _, ok := pv.Annotations[jobs.AnnMachineID]; ok && tc.machineID == "" {
				t.Error("an unknown machine ID is recorded")
			}
		})
	}
}

func TestUnrecordedPVIsAdoptedByTheNodesMachine(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	legacy := naming.PVName("a", vol1)
	f.setMachine("a", "m1", "u1")
	f.sync(nodeKey("a"))
	pv := f.pv(legacy)
	if pv == nil || pv.Annotations[jobs.AnnMachineID] != "m1" || pv.Annotations[jobs.AnnSystemUUID] != "u1" {
		t.Fatalf("PV %s not adopted by machine m1/u1: %v", legacy, pv)
	}
	f.discover("a", fsReport("a", "vol1"))
	pvs, _ := f.kube.CoreV1().PersistentVolumes().List(t.Context(), metav1.ListOptions{})
	if len(pvs.Items) != 1 || pvs.Items[0].Name != legacy {
		t.Errorf("the adopted volume got another PV: %d PVs", len(pvs.Items))
	}
	if machine.Marked(f.pv(legacy)) {
		t.Error("an adopted PV is marked machine-replaced")
	}
}

// TestReplacedMachine covers what a machine change does before any report
// of the new machine: nothing is wiped, nothing new is published, used PVs
// are kept and marked, and only a PV Bound to its live claim blocks it.
func TestReplacedMachine(t *testing.T) {
	tests := []struct {
		name        string
		policy      v1.PersistentVolumeReclaimPolicy
		phase       v1.PersistentVolumePhase
		claimed     bool
		warn        bool
		wantKept    bool
		wantBlocked bool
	}{
		{name: "an available PV is deleted", policy: v1.PersistentVolumeReclaimDelete, phase: v1.VolumeAvailable},
		{name: "a released Delete PV is kept, unwiped, until a report proves its disk", policy: v1.PersistentVolumeReclaimDelete,
			phase: v1.VolumeReleased, claimed: true, wantKept: true},
		{name: "a bound PV is kept and its claim blocked", policy: v1.PersistentVolumeReclaimDelete,
			phase: v1.VolumeBound, claimed: true, wantKept: true, wantBlocked: true},
		{name: "a bound PV under the Warn policy is kept and not blocked", policy: v1.PersistentVolumeReclaimDelete,
			phase: v1.VolumeBound, claimed: true, warn: true, wantKept: true},
		{name: "a released Retain PV is kept and blocks no claim", policy: v1.PersistentVolumeReclaimRetain,
			phase: v1.VolumeReleased, claimed: true, wantKept: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tweak func(*Options, *Informers)
			if tc.warn {
				tweak = func(o *Options, _ *Informers) { o.ReplacedMachinePolicy = ReplacedMachineWarn }
			}
			f := newFixtureWith(t, tweak, nil, machineNode("a", "m1", "u1"), newClass("fast", tc.policy))
			f.discover("a", fsReport("a", "vol1"))
			old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
			f.setPhase(old, tc.phase, tc.claimed)
			f.events()

			f.setMachine("a", "m2", "u2")
			f.sync(nodeKey("a"))
			f.sync(volKey(naming.MachineVolumeID("a", vol1, "m1", "u1")))
			pv := f.pv(old)
			if kept := pv != nil && pv.DeletionTimestamp == nil; kept != tc.wantKept {
				t.Fatalf("old PV kept = %v, want %v", kept, tc.wantKept)
			}
			if len(f.jobNames(jobs.RoleCleanup)) != 0 {
				t.Errorf("a cleanup Job would wipe under the new machine: %v", f.jobNames(jobs.RoleCleanup))
			}
			evs := f.events()
			if !strings.Contains(strings.Join(evs, "\n"), "Warning MachineReplaced") {
				t.Errorf("no MachineReplaced warning in %q", evs)
			}
			if tc.wantKept {
				if !machine.Marked(pv) || pv.Labels[jobs.LabelMachineReplaced] != "true" {
					t.Errorf("kept PV is not marked: %v %v", pv.Annotations, pv.Labels)
				}
				if tc.claimed && !strings.Contains(strings.Join(evs, "\n"), "Warning MachineReplaced PV "+old) {
					t.Errorf("no Event on the claim in %q", evs)
				}
			}
			_, blocked := f.blockedClaims()[blockedclaims.Key("default", "claim")]
			if blocked != tc.wantBlocked {
				t.Errorf("claim blocked = %v, want %v", blocked, tc.wantBlocked)
			}
		})
	}
}

func TestMachineMatchedAgainUnblocks(t *testing.T) {
	tests := []struct {
		name   string
		accept func(f *fixture, pv string)
	}{
		{name: "the old machine is back", accept: func(f *fixture, _ string) { f.setMachine("a", "m1", "u1") }},
		{name: "an admin hands the PV to the new machine", accept: func(f *fixture, name string) {
			pv := f.pv(name)
			pv.Annotations[jobs.AnnMachineID], pv.Annotations[jobs.AnnSystemUUID] = "m2", "u2"
			if _, err := f.kube.CoreV1().PersistentVolumes().Update(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
				f.t.Fatal(err)
			}
			f.syncStores()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, old := replacedFixture(t)
			if len(f.blockedClaims()) != 1 {
				t.Fatal("setup: claim not blocked")
			}
			tc.accept(f, old)
			f.sync(nodeKey("a"))
			if pv := f.pv(old); pv == nil || machine.Marked(pv) || pv.Labels[jobs.LabelMachineReplaced] != "" {
				t.Errorf("PV still marked: %v", pv)
			}
			if b := f.blockedClaims(); len(b) != 0 {
				t.Errorf("claims still blocked: %v", b)
			}
			f.wantEvent("MachineMatched")
		})
	}
}

// TestReplacedBoundPVReleasedLaterIsNotWiped: a claim released after its
// machine changed gets no cleanup Job, and its PV stays until a report.
func TestReplacedBoundPVReleasedLaterIsNotWiped(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	id := naming.MachineVolumeID("a", vol1, "m1", "u1")
	old := naming.PVNameForID(id)
	f.setPhase(old, v1.VolumeBound, true)
	f.setMachine("a", "m2", "u2")
	f.sync(nodeKey("a"))
	f.setPhase(old, v1.VolumeReleased, false)
	f.sync(volKey(id))
	if len(f.jobNames(jobs.RoleCleanup)) != 0 {
		t.Errorf("cleanup Job created for a replaced machine's PV: %v", f.jobNames(jobs.RoleCleanup))
	}
	if pv := f.pv(old); pv == nil || !machine.Marked(pv) {
		t.Errorf("released PV of a replaced machine not kept and marked: %v", pv)
	}
}

func TestNodeWithoutIdentityChecksNothing(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	f.setPhase(old, v1.VolumeAvailable, false)
	f.setMachine("a", "", "")
	f.sync(nodeKey("a"))
	f.discover("a", fsReport("a", "vol1"))
	if pv := f.pv(old); pv == nil || machine.Marked(pv) {
		t.Errorf("PV of a node that reports no identity was handled as replaced: %v", pv)
	}
	if pv := f.pv(naming.PVName("a", vol1)); pv != nil {
		t.Error("the volume was published twice")
	}
}

func TestUnknownReplacedMachinePolicyIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	opts := f.c.opts
	opts.ReplacedMachinePolicy = "Delete"
	_, err := newController(t.Context(), f.kube, f.inf, f.recorder, opts)
	if err == nil || !strings.Contains(err.Error(), "BlockPods") {
		t.Errorf("error = %v, want one listing the valid policies", err)
	}
}

func TestMachineChangeEventChecksPVsAndRunsDiscovery(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	f.setPhase(old, v1.VolumeBound, true)
	f.drain()
	f.c.onNode(machineNode("a", "m1", "u1"), machineNode("a", "m1", "u1"))
	if f.c.queue.Len() != 0 {
		t.Fatal("an unchanged node update queued work")
	}
	f.setMachine("a", "m2", "u2")
	f.c.onNode(machineNode("a", "m1", "u1"), machineNode("a", "m2", "u2"))
	f.drain()
	if !machine.Marked(f.pv(old)) {
		t.Error("a machine change event did not mark the bound PV")
	}
	if f.job(naming.DiscoveryJobName("a")) == nil {
		t.Error("a machine change event did not start discovery")
	}
	if b := f.policyClaims(); b[blockedclaims.Key("default", "claim")] != old {
		t.Errorf("blocked claims %v, want default.claim → %s", b, old)
	}
}
