//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// kubeletBefore60 is how the kubelet reads an ext4 file system's UUID on
// a kernel before 6.0 (no FS_IOC_GETFSUUID, 6.9, nor EXT4_IOC_GETFSUUID,
// 6.0) on a node without udev: it can only read the superblock, as root.
const kubeletBefore60 = "generic-ioctl,fs-ioctl,udev"

// jobsBefore60 is how the provisioner's Jobs read it there: unprivileged,
// they cannot read the superblock either, so a directory is known by its
// file handle and its device's identity (fhdisk:).
const jobsBefore60 = kubeletBefore60 + ",superblock"

// TestLocalPVIdentityOnKernelsBefore60 runs the provisioner's discovery and
// cleanup and the kubelet's check on one node as they run on a kernel
// before 6.0 (Debian 11, Ubuntu 22.04, RHEL 9) without udev: neither ioctl
// that reads a file system's UUID answers, in the master's Jobs
// (identity.UnavailableEnv on the master, which passes it on) or in the
// node's kubelet (the same variable in a drop-in of its unit), and only
// the kubelet, as root, reads superblocks. Two ext4 disks with UUIDs in
// the class directory get one PV each, recorded by file handle and
// device; the tenants' pods start on them, though the kubelet could read
// more; when the operator swaps the two mounts, pods made again are
// refused with an Event naming the other PV, and start on their own disks
// once the mounts are restored.
func TestLocalPVIdentityOnKernelsBefore60(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	n := c.Nodes[len(c.Nodes)-1]
	if !n.HasServiceManager() {
		t.Fatalf("node %s has no service manager to restart its kubelet with", n.Name)
	}
	kubeletWithEnv(ctx, t, c, n, []string{identity.UnavailableEnv + "=" + kubeletBefore60})

	d := newLPVDisksOn(t, n)
	d.masterEnv = []corev1.EnvVar{{Name: identity.UnavailableEnv, Value: jobsBefore60}}
	tenants := []*swapTenant{{name: "old-a"}, {name: "old-b"}}
	for _, tn := range tenants {
		mountTenantDisk(ctx, t, n, d, tn)
	}
	deployLPV(ctx, t, c, d)

	ids := map[string]string{}
	for _, tn := range tenants {
		tn.pv = waitForPVOn(ctx, t, c, n.Name, tn.mount, "", corev1.VolumeAvailable)
		id := tn.pv.Annotations[jobs.AnnDiskID]
		if other, dup := ids[id]; dup || !strings.HasPrefix(id, "fhdisk:") {
			t.Fatalf("PV %s of %s records disk %q (also recorded by %q): want an fhdisk: identity of its own", tn.pv.Name, tn.mount, id, other)
		}
		ids[id] = tn.pv.Name
		t.Logf("PV %s of %s records %s", tn.pv.Name, tn.mount, id)
		tn.pod = tenantPod(ctx, t, c, tn, tn.pv.Name)
	}
	for _, tn := range tenants {
		tn.pod = c.WaitForPod(ctx, t, tn.pod.Name, 120*time.Second, corev1.PodRunning)
		c.RequireFile(ctx, t, tn.pod.Name, "/data/starts", tn.name)
	}

	// The operator swaps the mounts while the pods are gone, and the
	// pods are made again at once.
	for _, tn := range tenants {
		c.DeletePod(t, tn.pod.Name)
	}
	a, b := tenants[0], tenants[1]
	mountPair(ctx, t, n, a.mount, b.mount, b.dev, a.dev)
	for _, tn := range tenants {
		tn.pod = tenantPod(ctx, t, c, tn, "")
	}
	for i, tn := range tenants {
		other := tenants[1-i]
		c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Kind: "Pod", Name: tn.pod.Name,
			Reason: "FailedMount", Type: corev1.EventTypeWarning, MessageContains: other.pv.Name}, 120*time.Second)
	}

	mountPair(ctx, t, n, a.mount, b.mount, a.dev, b.dev)
	for _, tn := range tenants {
		c.WaitForPod(ctx, t, tn.pod.Name, 240*time.Second, corev1.PodRunning)
	}
	for _, tn := range tenants {
		requireOnlyStarts(ctx, t, n, tn)
	}
}

// tenantPod creates tenant tn's pod: with a new claim bound to PV pvName,
// or on the claim it has when pvName is empty.
func tenantPod(ctx context.Context, t *testing.T, c *framework.Cluster, tn *swapTenant, pvName string) *corev1.Pod {
	t.Helper()
	name := "e2e-oldkernel-" + tn.name
	var pod *corev1.Pod
	if pvName != "" {
		pod = claimPod(ctx, t, c, name, pvName, tenantScript(tn.name))
		t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), "delete", "pvc", name, "--wait", "--timeout=60s") })
	} else {
		pod = tenantPodOnClaim(name, tn)
	}
	c.CreatePodOn(ctx, t, pod, "")
	return pod
}

// kubeletWithEnv restarts node n's kubelet with env added to its unit, and
// restarts it without when the test ends.
func kubeletWithEnv(ctx context.Context, t *testing.T, c *framework.Cluster, n *framework.Node, env []string) {
	t.Helper()
	if err := n.SetServiceEnvironment(ctx, "kubelet", env); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := n.SetServiceEnvironment(ctx, "kubelet", nil); err != nil {
			t.Error(err)
		}
		serviceJob(ctx, t, c, n, "kubelet", "restart")
	})
	serviceJob(ctx, t, c, n, "kubelet", "restart")
}
