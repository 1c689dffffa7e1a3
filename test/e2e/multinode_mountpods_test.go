//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMultiNodeMountPodAttach: an attachable flex driver that only the
// mount pods have, used by a pod on node B. The controller-manager's attach
// and detach and B's kubelet's waitforattach and mountdevice all run in
// B's mount pod (its driver log shows them); node A's mount pod gets no
// call. (A's kubelet cannot exec into B's pod at all: it reaches
// containers through its own node's runtime only. Its exec counter does
// not tell its own mount pod's driver probes from other calls, so it is
// not checked here.)
func TestMultiNodeMountPodAttach(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	c.RequireFlag(t, "kube-controller-manager", "--experimental-mount-namespace=kube-mount")
	c.RequireFlag(t, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	// A is the last node: the first may still be tearing down an earlier
	// test's attachable volume.
	a, b := c.Nodes[len(c.Nodes)-1], c.Nodes[1]
	if a == b {
		c.RequireNodes(t, 3)
	}
	t.Cleanup(func() { muRemove(t, c) })
	muDeploy(ctx, t, c)
	mpA := muWaitReadyOn(ctx, t, c, a.Name)
	mpB := muWaitReadyOn(ctx, t, c, b.Name)

	pod := framework.BusyboxPod("mu-mn-attach", "cat /data/device && sleep 3600")
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{
		Driver: "nodeplug.io/attach"}}}}
	c.CreatePodOn(ctx, t, pod, b.Name)
	c.WaitForPod(ctx, t, pod.Name, 150*time.Second, corev1.PodRunning)
	logB := muDriverLog(ctx, t, c, mpB)
	for _, want := range []string{" attach ", " waitforattach ", " mountdevice "} {
		if !strings.Contains(logB, want) {
			t.Errorf("%s's mount pod driver log has no%scall:\n%s", b.Name, want, logB)
		}
	}

	c.DeletePod(t, pod.Name)
	err := framework.Poll(ctx, 150*time.Second, func(ctx context.Context) bool {
		return strings.Contains(muDriverLog(ctx, t, c, mpB), " detach v ")
	})
	if err != nil {
		t.Fatalf("%s's mount pod driver log has no detach:\n%s", b.Name, muDriverLog(ctx, t, c, mpB))
	}
	if log := muDriverLogIfAny(ctx, c, mpA); strings.Contains(log, " attach") || strings.Contains(log, "mountdevice") {
		t.Errorf("%s's mount pod got calls for a volume of %s:\n%s", a.Name, b.Name, log)
	}
}

// muDriverLogIfAny is the attach driver's log in mount pod mp, or "" if it
// has none (the driver was never called there).
func muDriverLogIfAny(ctx context.Context, c *framework.Cluster, mp string) string {
	out, err := c.Kubectl(ctx, "-n", muNamespace, "exec", mp, "--", "cat", "/var/log/nodeplug-attach/driver.log")
	if err != nil {
		return ""
	}
	return out
}

// TestMultiNodeMountUtilitiesUpgrade: mount-utilities-upgrade moves
// node A to a new image version while a consumer on node B uses a volume
// B's mount pod serves. A's consumer is evicted and A's mount pod replaced;
// B's mount pod, its consumer and the consumer's volume are untouched, and
// B keeps no taint.
func TestMultiNodeMountUtilitiesUpgrade(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	c.RequireFlag(t, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	t.Setenv("MU_POLL_INTERVAL", "0.5")
	a, b := c.Nodes[0], c.Nodes[1]
	t.Cleanup(func() { muRemove(t, c) })
	oldA := muDeploy(ctx, t, c)
	mpB := muWaitReadyOn(ctx, t, c, b.Name)
	fuse := corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "nodeplug.io/fuse"}}
	c.CreatePodOn(ctx, t, muConsumer("mu-mn-up-a", fuse), a.Name)
	c.CreatePodOn(ctx, t, muConsumer("mu-mn-up-b", fuse), b.Name)
	c.WaitForPod(ctx, t, "mu-mn-up-a", 120*time.Second, corev1.PodRunning)
	before := c.WaitForPod(ctx, t, "mu-mn-up-b", 120*time.Second, corev1.PodRunning)
	muNewVersion(ctx, t, c, 2)

	out, code := muUpgrade(ctx, t, c, "--timeout", "180", a.Name)
	if code != 0 {
		t.Fatalf("upgrading %s: exit %d:\n%s", a.Name, code, out)
	}
	if cur := muWaitReadyOn(ctx, t, c, a.Name); cur == oldA {
		t.Errorf("%s's mount pod %s was not replaced", a.Name, oldA)
	}
	if cur := muWaitReadyOn(ctx, t, c, b.Name); cur != mpB {
		t.Errorf("%s's mount pod %s was replaced by %s while only %s was upgraded", b.Name, mpB, cur, a.Name)
	}
	after, err := c.Client.CoreV1().Pods("default").Get(ctx, "mu-mn-up-b", metav1.GetOptions{})
	if err != nil || after.UID != before.UID || krContainer(after) != krContainer(before) {
		t.Fatalf("%s's consumer changed during %s's upgrade: %v, %v", b.Name, a.Name, krContainer(after), err)
	}
	if got, err := c.Kubectl(ctx, "exec", "mu-mn-up-b", "--", "cat", "/data/f"); err != nil || strings.TrimSpace(got) != "written-by-mu-mn-up-b" {
		t.Errorf("%s's consumer lost its volume during %s's upgrade: %q, %v", b.Name, a.Name, got, err)
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == muTaintKey {
			t.Errorf("%s got the upgrade taint while %s was upgraded", b.Name, a.Name)
		}
	}
}
