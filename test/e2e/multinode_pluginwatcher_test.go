//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMultiNodeCSIDriverOnOneNode: a CSI driver that registers through
// nodeplug's directory on node B appears in B's CSINode only. A pod on B
// gets its volume; a pod on another node waits with a FailedMount event,
// as no driver of that name registered there.
func TestMultiNodeCSIDriverOnOneNode(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	other, b := c.Nodes[0], c.Nodes[1]
	startCSIDriver(t, b, registrationDir(t, c))
	createCSIDriverObject(ctx, t, c)
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool { return c.CSINodeHasDriver(ctx, b.Name, csiDriverName) }); err != nil {
		t.Fatalf("CSINode %s does not list %s: %v", b.Name, csiDriverName, err)
	}
	for _, n := range c.Nodes {
		if n != b && c.CSINodeHasDriver(ctx, n.Name, csiDriverName) {
			t.Errorf("CSINode %s lists %s, which registered on %s only", n.Name, csiDriverName, b.Name)
		}
	}

	onB, elsewhere := csiPod("e2e-mn-csi-b"), csiPod("e2e-mn-csi-other")
	c.CreatePodOn(ctx, t, onB, b.Name)
	c.CreatePodOn(ctx, t, elsewhere, other.Name)
	c.WaitForPod(ctx, t, onB.Name, 90*time.Second, corev1.PodRunning)
	c.RequireFile(ctx, t, onB.Name, "/data/hello", csiGreeting)
	msg := c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Name: elsewhere.Name, Reason: "FailedMount"}, 90*time.Second).Message
	if !strings.Contains(msg, csiDriverName) {
		t.Errorf("the FailedMount event of the pod on %s does not name the driver: %q", other.Name, msg)
	}
	if got := c.WaitForPod(ctx, t, elsewhere.Name, time.Second, corev1.PodPending); got.Spec.NodeName != other.Name {
		t.Fatalf("pod %s is on %s, want %s", elsewhere.Name, got.Spec.NodeName, other.Name)
	}
}
