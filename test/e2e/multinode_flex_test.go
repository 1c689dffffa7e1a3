//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMultiNodeFlexInstaller: the shipped installer DaemonSet, unchanged,
// installs its driver on every node, and a pod on each node mounts it. The
// pods are created as soon as the rollout is done, as an operator's next
// step would be.
func TestMultiNodeFlexInstaller(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	requireFlexDiscovery(t, c)
	ctx := t.Context()
	c.CreateDaemonSet(ctx, t, loadDriverDaemonSet(t, framework.FlexDir))
	// The installer is Ready only once its copy is done (/readyz), so the
	// driver is on every node as soon as the rollout is.
	requireDriverOnEveryNode(t, c, "nodeplug.io~tmpfs/tmpfs", "")
	var pods []string
	for _, n := range c.Nodes {
		pod := flexPod("e2e-mn-tmpfs-"+fmt.Sprint(n.Index), "nodeplug.io/tmpfs", nil)
		c.CreatePodOn(ctx, t, pod, n.Name)
		pods = append(pods, pod.Name)
	}
	for _, name := range pods {
		c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodRunning)
		c.RequireMountType(ctx, t, name, "/data", "tmpfs")
	}
}

// TestMultiNodeFlexDriverOnOneNode: a driver installed on node A only. A
// pod on A runs; a pod pinned to B waits with upstream's FailedMount event
// ("no volume plugin matched"), and runs once B gets the driver, without
// being re-created.
func TestMultiNodeFlexDriverOnOneNode(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	requireFlexDiscovery(t, c)
	ctx := t.Context()
	a, b := c.Nodes[0], c.Nodes[1]
	const dir, exe, driver = "nodeplug~e2e-onenode", "e2e-onenode", "nodeplug/e2e-onenode"
	installDriver(t, a, dir, exe, trivialDriver)

	onA := flexPod("e2e-onenode-a", driver, nil)
	c.CreatePodOn(ctx, t, onA, a.Name)
	onB := flexPod("e2e-onenode-b", driver, nil)
	c.CreatePodOn(ctx, t, onB, b.Name)
	c.WaitForPod(ctx, t, onA.Name, 60*time.Second, corev1.PodRunning)
	c.RequireFile(ctx, t, onA.Name, "/data/hello", "hello from flex")

	msg := c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Name: onB.Name, Reason: "FailedMount"}, 90*time.Second).Message
	// Upstream's message: "... failed to get Plugin from volumeSpec for
	// volume "data" err=no volume plugin matched"; it names neither the
	// driver nor the node.
	if !strings.Contains(msg, "no volume plugin matched") {
		t.Errorf("the FailedMount event of the pod on %s, which lacks the driver: %s", b.Name, msg)
	}
	if got := c.WaitForPod(ctx, t, onB.Name, time.Second, corev1.PodPending); got.Spec.NodeName != b.Name {
		t.Fatalf("pod %s is on %s, want %s", onB.Name, got.Spec.NodeName, b.Name)
	}

	installDriver(t, b, dir, exe, trivialDriver)
	c.WaitForPod(ctx, t, onB.Name, 60*time.Second, corev1.PodRunning)
	c.RequireFile(ctx, t, onB.Name, "/data/hello", "hello from flex")
}
