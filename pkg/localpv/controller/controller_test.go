package controller

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// drain processes every queued key that is due, refreshing the caches after
// each one, and fires the PV and Job handlers for what changed.
func (f *fixture) drain() {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	for i := 0; f.c.queue.Len() > 0; i++ {
		if i > 100 {
			f.t.Fatal("queue does not drain")
		}
		f.c.processNextWorkItem(ctx)
		f.syncStores()
	}
}

func TestQueueDrivesDiscoveryFromNodeEvents(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.c.onNode(nil, newNode("a", nil))
	f.drain()
	name := naming.DiscoveryJobName("a")
	if f.job(name) == nil {
		t.Fatal("a node add event did not lead to a discovery Job")
	}
	f.finishJob(name, true, mustEncode(t, fsReport("a", "vol1"))...)
	f.c.onJob(f.job(name))
	f.drain()
	if f.pv(naming.PVName("a", vol1)) == nil {
		t.Fatal("a Job update event did not lead to a PV")
	}
	// Unchanged node updates are ignored.
	f.c.onNode(newNode("a", nil), newNode("a", nil))
	if f.c.queue.Len() != 0 {
		t.Fatal("an unchanged node update queued work")
	}
}

func TestRestartHandlesNodesDeletedWhileDown(t *testing.T) {
	f := newFixture(t, map[string]string{config.KeyDeleteUnboundPVsOfDeletedNodes: "true"},
		newNode("a", nil), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	f.setPhase(naming.PVName("a", vol1), v1.VolumeAvailable, false)
	if err := f.kube.CoreV1().Nodes().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.restart()
	f.c.enqueueKnownNodes()
	f.drain()
	if f.pv(naming.PVName("a", vol1)) != nil {
		t.Fatal("PV of a node deleted while the master was down was kept")
	}
}

func TestMalformedNotificationIsIgnored(t *testing.T) {
	f := newFixture(t, nil, newNode("a", nil))
	f.notify("", 1)
	if f.c.queue.Len() != 0 {
		t.Fatal("a malformed notification queued work")
	}
}
