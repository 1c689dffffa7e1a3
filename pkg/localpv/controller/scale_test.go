package controller

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

// TestReportDoesNotListTheMemory (issue 37 item 2): a discovery report
// looks its disks up in the cache of the memory of unwiped disks, by key
// and legacy form, and lists no UnwipedDisk: a returned disk is still held
// and a new one published. Reading the whole memory per report grew with
// every disk the cluster dropped unwiped.
func TestReportDoesNotListTheMemory(t *testing.T) {
	returned := unwiped.Disk{ID: testDiskID("n1", "fast", "vol1"), PV: "old", Node: "n1", Path: "/mnt/fast/vol1", Reason: "test"}
	memory := unwipedtest.Client(unwipedtest.Object(returned))
	f := newFixtureWith(t, func(o *Options, _ *Informers) {
		o.Unwiped = unwipedtest.CachedStore(t, memory, fake.NewClientset(), testNS, nil, false)
	}, nil, newNode("n1", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	_, ctx := ktesting.NewTestContext(t)
	if err := f.c.checkMemory(ctx); err != nil { // the gate's check, every 10 s
		t.Fatal(err)
	}
	memory.ClearActions()
	f.discover("n1", fsReport("n1", "vol0", "vol1"))
	for _, a := range memory.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == v1alpha1.UnwipedDiskGroupVersionResource {
			t.Errorf("the report listed the memory: %v", a)
		}
	}
	pv0 := f.pv(naming.PVNameForID(naming.MachineVolumeID("n1", "/mnt/fast/vol0", "", "")))
	pv1 := f.pv(naming.PVNameForID(naming.MachineVolumeID("n1", "/mnt/fast/vol1", "", "")))
	if pv0 == nil || pvstate.Held(pv0) {
		t.Errorf("the new disk is not published: %v", pv0)
	}
	if pv1 == nil || !pvstate.Held(pv1) {
		t.Errorf("the returned unwiped disk is not held: %v", pv1)
	}
}
