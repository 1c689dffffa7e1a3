package localpv

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// TestMasterRecordsInventory: the master, as its own ServiceAccount, writes
// the disk inventory of an accepted report into the node's NodeDiskState
// status, which changes no generation and so asks for no discovery.
func TestMasterRecordsInventory(t *testing.T) {
	e, sim := newMasterEnv(t)
	r := disks("node-a", "vol1")
	r.Disks = []report.Disk{
		{Name: "nvme0n1", Size: 1 << 40, Model: "Samsung SSD 970 EVO Plus 1TB", Serial: "S4EWNX0N123456",
			WWN: "eui.0025385b71b01234", IDs: []string{"nvme-eui.0025385b71b01234"}, Signature: report.SignatureNone},
		{Name: "sda", Size: 4 << 40, Rotational: true, Vendor: "ATA", Partitions: 2, Signature: "gpt"},
	}
	r.DisksTotal = 2
	sim.setDisks("node-a", r)
	e.createNode(t, "node-a")
	e.notify(t, "node-a")
	e.startMaster(t, time.Second)
	e.waitForPV(t, pvName("node-a", "vol1"), "")

	ri := e.dyn.Resource(v1alpha1.SchemeGroupVersionResource)
	var state *v1alpha1.NodeDiskState
	poll(t, "the inventory in the NodeDiskState status", func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		state, err = v1alpha1.FromUnstructured(u)
		return err == nil && state.Status.DisksTotal == 2, err
	})
	st := state.Status
	if len(st.Disks) != 2 || st.Disks[0].Serial != "S4EWNX0N123456" || st.Disks[0].IDs[0] != "nvme-eui.0025385b71b01234" ||
		!st.Disks[1].Rotational || st.Disks[1].Partitions != 2 || st.Disks[1].Signature != "gpt" || st.InventoryTime == nil {
		t.Errorf("bad status: %+v", st)
	}
	if state.Generation != 1 {
		t.Errorf("generation %d after the status write, want 1", state.Generation)
	}
	if n := len(sim.discoveries("node-a")); n != 1 {
		t.Errorf("%d discovery runs, want 1: a status write must not ask for another", n)
	}
}
