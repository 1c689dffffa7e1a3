package localpv

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// TestMasterPublishesDiscoveredVolumes: a new node is discovered by a Job
// pinned to it, with no API token, and each reported volume becomes a PV.
func TestMasterPublishesDiscoveredVolumes(t *testing.T) {
	e, sim := newMasterEnv(t)
	sim.setDisks("node-a", disks("node-a", "vol1", "vol2"))
	e.createNode(t, "node-a")
	e.startMaster(t, time.Second)

	pv := e.waitForPV(t, pvName("node-a", "vol1"), "")
	e.waitForPV(t, pvName("node-a", "vol2"), "")
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Value() != 20<<30 {
		t.Errorf("capacity %s, want 20Gi", got.String())
	}
	if pv.Spec.Local == nil || pv.Spec.Local.Path != fastDir+"/vol1" || pv.Spec.StorageClassName != "fast" ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		*pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("unexpected spec: %+v", pv.Spec)
	}
	term := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != corev1.LabelHostname || !slices.Equal(term.Values, []string{"node-a"}) {
		t.Errorf("node affinity %+v, want hostname node-a", term)
	}
	if pv.Labels[jobs.LabelManagedBy] != jobs.ManagedByValue || pv.Annotations[jobs.AnnHostPath] != fastDir+"/vol1" ||
		pv.Annotations[jobs.AnnNode] != "node-a" || !slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) {
		t.Errorf("missing provenance: labels %v annotations %v finalizers %v", pv.Labels, pv.Annotations, pv.Finalizers)
	}
	pods, err := e.cp.Client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
			t.Errorf("discovery pod %s may get an API token", p.Name)
		}
		for _, v := range p.Spec.Volumes {
			if v.Projected != nil || v.Secret != nil {
				t.Errorf("discovery pod %s has credential volume %s", p.Name, v.Name)
			}
		}
	}
}

// TestRejectedReportsRaiseEvents: what a node cannot prove is rejected with
// an Event on its Node, and publishes nothing; good volumes of the same
// report are still published.
func TestRejectedReportsRaiseEvents(t *testing.T) {
	e, sim := newMasterEnv(t)
	escape := disks("node-a", "ok", "../../etc")
	sim.setDisks("node-a", escape)
	sim.setDisks("node-b", disks("node-x", "vol1")) // claims to be another node
	sim.setDisks("node-c", disks("node-c", "vol1"))
	sim.setPodNode("node-c", "node-a") // node-c's Job ran on node-a
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		e.createNode(t, n)
	}
	e.startMaster(t, time.Second)

	tests := []struct {
		name, node, reason, message string
	}{
		{name: "path outside the class directory", node: "node-a", reason: "VolumeRejected", message: `"../../etc" rejected (InvalidName)`},
		{name: "report for another node", node: "node-b", reason: "DiscoveryReportRejected", message: `report is for node "node-x"`},
		{name: "pod on another node", node: "node-c", reason: "DiscoveryReportRejected", message: `discovery pod ran on node "node-a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := e.waitForEvent(t, "Node", tc.node, tc.reason, tc.message)
			if ev.Type != corev1.EventTypeWarning {
				t.Errorf("Event type %s, want Warning", ev.Type)
			}
			sim.waitForDiscovery(t, tc.node, 0)
			pvs, err := e.cp.Client.CoreV1().PersistentVolumes().List(t.Context(), metav1.ListOptions{
				LabelSelector: jobs.LabelNodeID + "=" + naming.NodeID(tc.node)})
			if err != nil {
				t.Fatal(err)
			}
			for _, pv := range pvs.Items {
				if pv.Spec.Local.Path != fastDir+"/ok" {
					t.Errorf("rejected volume published as %s (%s)", pv.Name, pv.Spec.Local.Path)
				}
			}
		})
	}
	e.waitForPV(t, pvName("node-a", "ok"), "")
}

// TestDeletedNodeLosesItsNodeDiskState: the master, with the shipped RBAC,
// deletes the NodeDiskState of a deleted node, which its watcher can no
// longer do, and leaves those of other nodes alone.
func TestDeletedNodeLosesItsNodeDiskState(t *testing.T) {
	e, sim := newMasterEnv(t)
	for _, n := range []string{"node-a", "node-b"} {
		sim.setDisks(n, disks(n, "vol1"))
		e.createNode(t, n)
		e.notify(t, n)
	}
	e.startMaster(t, time.Second)
	e.waitForPV(t, pvName("node-a", "vol1"), "")
	if err := e.cp.Client.CoreV1().Nodes().Delete(t.Context(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ri := e.dyn.Resource(v1alpha1.SchemeGroupVersionResource)
	poll(t, "NodeDiskState of the deleted node to be deleted", func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, "node-a", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := ri.Get(t.Context(), "node-b", metav1.GetOptions{}); err != nil {
		t.Fatalf("NodeDiskState of a live node: %v", err)
	}
}
