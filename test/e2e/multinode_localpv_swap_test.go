//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// swapTenant is one claim and its pod on one of the test's disks.
type swapTenant struct {
	name, mount, dev string
	pv               *corev1.PersistentVolume
	pod              *corev1.Pod
}

// tenantScript records every start of the tenant's pod on the disk it
// sees, then keeps running.
func tenantScript(name string) string {
	return "echo " + name + " >> /data/starts && sync && sleep 3600"
}

// TestMultiNodeLocalPVDisksSwappedAcrossRestart acts as an operator whose
// node comes back from a restart with its data disks mounted at each
// other's paths (an fstab that names disks by /dev/sdX). Two pairs of ext4
// disks are mounted in the provisioner's class directory of the second node:
// one pair with file system UUIDs, one made with `mkfs.ext4 -U clear`, which
// has none (every disk must still get its own PV). Four tenants each bind
// a claim and start a pod that writes its name on its disk. The node then
// restarts with each pair swapped; one tenant's pod is re-created at once,
// as a StatefulSet does. The kubelet's check refuses every mount: the pods
// wait with an Event that names the PV whose disk was found and the fix.
// Once the operator restores the mounts, every pod starts on its own disk
// with no action on the PVs, and no disk ever records another tenant.
func TestMultiNodeLocalPVDisksSwappedAcrossRestart(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	n := c.Nodes[1]
	if !n.HasServiceManager() {
		t.Fatalf("node %s has no service manager to restart its kubelet with", n.Name)
	}
	d := newLPVDisksOn(t, n)
	tenants := []*swapTenant{{name: "uuid-a"}, {name: "uuid-b"}, {name: "nouuid-a"}, {name: "nouuid-b"}}
	for _, tn := range tenants {
		var mkfs []string
		if strings.HasPrefix(tn.name, "nouuid") {
			mkfs = []string{"-U", "clear"}
		}
		mountTenantDisk(ctx, t, n, d, tn, mkfs...)
	}
	deployLPV(ctx, t, c, d)

	ids := map[string]string{}
	for _, tn := range tenants {
		tn.pv = waitForPVOn(ctx, t, c, n.Name, tn.mount, "", corev1.VolumeAvailable)
		id := tn.pv.Annotations[jobs.AnnDiskID]
		if other, dup := ids[id]; dup || id == "" {
			t.Fatalf("PV %s of %s records disk %q, as does %s: two disks share one identity", tn.pv.Name, tn.mount, id, other)
		}
		ids[id] = tn.pv.Name
		tn.pod = claimPod(ctx, t, c, "e2e-swap-"+tn.name, tn.pv.Name, tenantScript(tn.name))
		// As a StatefulSet's or Deployment's pods are: the kubelet starts
		// them again after the node restarts.
		tn.pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
		c.CreatePodOn(ctx, t, tn.pod, "")
		claim := tn.pod.Name
		t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), "delete", "pvc", claim, "--wait", "--timeout=60s") })
	}
	for _, tn := range tenants {
		tn.pod = c.WaitForPod(ctx, t, tn.pod.Name, 120*time.Second, corev1.PodRunning)
		c.RequireFile(ctx, t, tn.pod.Name, "/data/starts", tn.name)
	}

	pairs := [][2]*swapTenant{{tenants[0], tenants[1]}, {tenants[2], tenants[3]}}
	restartNodeWith(ctx, t, c, n, tenants, func() {
		for _, p := range pairs {
			mountPair(ctx, t, n, p[0].mount, p[1].mount, p[1].dev, p[0].dev)
		}
	})
	// As a StatefulSet does: the pod is deleted and made again at once.
	again := tenants[0]
	c.DeletePod(t, again.pod.Name)
	recreated := tenantPodOnClaim(again.pod.Name, again)
	recreated.Spec.RestartPolicy = corev1.RestartPolicyAlways
	c.CreatePodOn(ctx, t, recreated, "")

	for _, p := range pairs {
		for i, tn := range p {
			other := p[1-i]
			c.RequireEvent(ctx, t, framework.EventQuery{Namespace: "default", Kind: "Pod", Name: tn.pod.Name,
				Reason: "FailedMount", Type: corev1.EventTypeWarning, MessageContains: other.pv.Name}, 120*time.Second)
		}
	}

	// The operator restores the mounts; the pods start on their own.
	for _, p := range pairs {
		mountPair(ctx, t, n, p[0].mount, p[1].mount, p[0].dev, p[1].dev)
	}
	for _, tn := range tenants {
		c.WaitForPod(ctx, t, tn.pod.Name, 240*time.Second, corev1.PodRunning)
		if pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, tn.pv.Name, metav1.GetOptions{}); err != nil ||
			pv.UID != tn.pv.UID || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != tn.pod.Name {
			t.Errorf("PV %s of tenant %s changed: %v %+v", tn.pv.Name, tn.name, err, pv)
		}
	}
	for _, tn := range tenants {
		awaitSecondStart(ctx, t, n, tn)
		requireOnlyStarts(ctx, t, n, tn)
	}
}

// awaitSecondStart waits until tenant tn's disk, mounted at its own path
// again, records a second start: the pod's phase says Running from before
// the restart until the kubelet acts, so it is no sign of the new start.
func awaitSecondStart(ctx context.Context, t *testing.T, n *framework.Node, tn *swapTenant) {
	t.Helper()
	err := framework.Poll(ctx, 240*time.Second, func(ctx context.Context) bool {
		out, err := n.Command(ctx, "cat", filepath.Join(tn.mount, "starts")).Output()
		return err == nil && len(strings.Fields(string(out))) >= 2
	})
	if err != nil {
		t.Errorf("the pod of %s did not start again on its disk: %v", tn.name, err)
	}
}

// mountTenantDisk mounts a new ext4 file system, made with mkfs.ext4's
// extra arguments, at tenant tn's directory in d's fast class on node n.
func mountTenantDisk(ctx context.Context, t *testing.T, n *framework.Node, d *lpvDisks, tn *swapTenant, mkfs ...string) {
	t.Helper()
	tn.mount = filepath.Join(d.fast, tn.name)
	if err := n.MkdirAll(ctx, tn.mount); err != nil {
		t.Fatal(err)
	}
	tn.dev = newExt4With(t, d, tn.name, mkfs...)
	n.Run(ctx, t, "mount", tn.dev, tn.mount)
}

// tenantPodOnClaim is tenant tn's pod on the claim it already has, name.
func tenantPodOnClaim(name string, tn *swapTenant) *corev1.Pod {
	pod := claimPodSpec(name, name)
	pod.Spec.Containers[0].Command = framework.BusyboxPod(name, tenantScript(tn.name)).Spec.Containers[0].Command
	return pod
}

// newExt4With makes a 64 MiB ext4 file system with mkfs.ext4's extra
// arguments on a new loop device of d and returns the device. On a node of
// an existing cluster the image, the file system and the loop device are
// made on the node, over SSH.
func newExt4With(t *testing.T, d *lpvDisks, name string, args ...string) string {
	t.Helper()
	img := filepath.Join(d.base, "img", name+".img")
	argv := append(append([]string{"-q", "-F"}, args...), img)
	if d.n.Remote() {
		ctx := context.Background()
		d.n.Run(ctx, t, "truncate", "-s", "64M", img)
		d.n.Run(ctx, t, "mkfs.ext4", argv...)
		dev := strings.TrimSpace(d.n.Run(ctx, t, "losetup", "-f", "--show", img))
		d.loops = append(d.loops, dev)
		return dev
	}
	host := d.host(img)
	if err := os.WriteFile(host, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(host, 64<<20); err != nil {
		t.Fatal(err)
	}
	argv[len(argv)-1] = host
	if out, err := exec.Command("mkfs.ext4", argv...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v: %s", host, err, out)
	}
	return attachLoop(t, d, host)
}

// mountPair unmounts the disks at mount points a and b in node n and mounts
// devA at a and devB at b.
func mountPair(ctx context.Context, t *testing.T, n *framework.Node, a, b, devA, devB string) {
	t.Helper()
	n.Run(ctx, t, "umount", a)
	n.Run(ctx, t, "umount", b)
	n.Run(ctx, t, "mount", devA, a)
	n.Run(ctx, t, "mount", devB, b)
}

// restartNodeWith does to the tenants' pods on node n what a restart of the
// node does: the kubelet stops, the pods' sandboxes and containers are gone
// and so are their volume mounts; between runs while the node is down (an
// fstab's mounts at boot); then the kubelet starts again and finds the pods
// it must run, as it does after a reboot.
func restartNodeWith(ctx context.Context, t *testing.T, c *framework.Cluster, n *framework.Node, tenants []*swapTenant, between func()) {
	t.Helper()
	serviceJob(ctx, t, c, n, "kubelet", "stop")
	for _, tn := range tenants {
		uid := string(tn.pod.UID)
		out, err := n.Command(ctx, "crictl", "pods", "--label", "io.kubernetes.pod.uid="+uid, "-q").Output()
		if err != nil {
			t.Fatalf("crictl pods of %s on %s: %v", tn.pod.Name, n.Name, err)
		}
		for _, id := range strings.Fields(string(out)) {
			n.Run(ctx, t, "crictl", "stopp", id)
			n.Run(ctx, t, "crictl", "rmp", "-f", id)
		}
		n.UnmountAll(t, filepath.Join(n.RootDir(), "pods", uid))
	}
	between()
	serviceJob(ctx, t, c, n, "kubelet", "start")
}

// requireOnlyStarts reads the record of pod starts on tenant tn's disk,
// mounted at its own path again, and fails t if any other tenant's pod
// ever ran on it.
func requireOnlyStarts(ctx context.Context, t *testing.T, n *framework.Node, tn *swapTenant) {
	t.Helper()
	if src := n.Run(ctx, t, "findmnt", "-n", "-o", "SOURCE", tn.mount); strings.TrimSpace(src) != tn.dev {
		t.Fatalf("%s is mounted from %q, want %s", tn.mount, src, tn.dev)
	}
	starts := strings.Fields(n.Run(ctx, t, "cat", filepath.Join(tn.mount, "starts")))
	for _, who := range starts {
		if who != tn.name {
			t.Errorf("the disk of %s (%s on node %s) was used by %s: starts %v", tn.name, tn.dev, n.Name, who, starts)
		}
	}
	if len(starts) < 2 {
		t.Errorf("the disk of %s records %v: want its pod started before and after the restart", tn.name, starts)
	}
	t.Logf("disk of %s: starts %v", tn.name, starts)
}
