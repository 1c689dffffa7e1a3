//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/util/testutil"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMultiNodeLocalPVReplacedMachine changes the machine behind node B's
// name twice (another /etc/machine-id bind-mounted in B's own mount
// namespace, the kubelet restarted), with two data disks (ext4 on loop
// devices, each mounted at its class directory path) whose claims are in
// use:
//   - re-imaged: both disks stay. Neither gets a second PV; both PVs are
//     handed to the new machine, and a tenant's new pod reads its data.
//   - replaced: one disk is swapped for a new one at the same path before
//     the machine changes. The new disk gets a new PV; the old PV is kept
//     and marked, new pods of its claim are refused, and the old disk's
//     data is intact.
func TestMultiNodeLocalPVReplacedMachine(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	n := c.Nodes[1]
	if n.OnHost() {
		testutil.MissingCapability(t, "node %s is the host, whose machine identity the test must not change", n.Name)
	}
	d := newLPVDisksOn(t, n)
	kept, _ := d.addExt4(ctx, t, "vol0")
	swapped, swappedDev := d.addExt4(ctx, t, "vol1")
	deployLPV(ctx, t, c, d)
	pvKept := waitForPVOn(ctx, t, c, n.Name, kept, "", corev1.VolumeAvailable)
	pvSwapped := waitForPVOn(ctx, t, c, n.Name, swapped, "", corev1.VolumeAvailable)
	for _, pv := range []*corev1.PersistentVolume{pvKept, pvSwapped} {
		if !strings.HasPrefix(pv.Annotations[jobs.AnnDiskID], "fs:") {
			t.Fatalf("PV %s records disk %q, want the file system's UUID", pv.Name, pv.Annotations[jobs.AnnDiskID])
		}
	}
	for name, pv := range map[string]*corev1.PersistentVolume{"e2e-lpv-kept": pvKept, "e2e-lpv-swapped": pvSwapped} {
		c.CreatePodOn(ctx, t, claimPod(ctx, t, c, name, pv.Name, "echo "+name+" > /data/f && sync"), "")
		c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodSucceeded)
		c.DeletePod(t, name)
		t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), "delete", "pvc", name, "--wait", "--timeout=60s") })
	}

	t.Run("re-imaged: every disk keeps its PV and its data", func(t *testing.T) {
		newID := randomMachineID(t)
		t.Cleanup(replaceMachineID(ctx, t, c, n, newID))
		for _, pv := range []*corev1.PersistentVolume{pvKept, pvSwapped} {
			waitForMachineOf(ctx, t, c, pv.Name, newID)
		}
		// The report that handed the PVs over has been consumed whole: a
		// second PV it would publish exists by then.
		waitForDiscoveryConsumed(ctx, t, c, n.Name)
		for _, pv := range []*corev1.PersistentVolume{pvKept, pvSwapped} {
			if other := findOtherPVOn(ctx, t, c, n.Name, pv.Spec.Local.Path, pv.Name); other != nil {
				t.Errorf("a second PV %s was published for the disk of %s", other.Name, pv.Name)
			}
		}
		readClaim(ctx, t, c, "e2e-lpv-kept", "e2e-lpv-kept")
	})

	t.Run("replaced: a new disk at the path gets a new PV, the old one is kept", func(t *testing.T) {
		newDev := d.swapExt4(ctx, t, swapped)
		newID := randomMachineID(t)
		t.Cleanup(replaceMachineID(ctx, t, c, n, newID))
		var fresh *corev1.PersistentVolume
		if err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
			fresh = findOtherPVOn(ctx, t, c, n.Name, swapped, pvSwapped.Name)
			return fresh != nil && fresh.Status.Phase == corev1.VolumeAvailable
		}); err != nil {
			out, _ := c.Kubectl(ctx, "get", "pv", "-o", "wide")
			t.Fatalf("the new disk at %s is not published as a new PV: %v\n%s", swapped, err, out)
		}
		if fresh.Annotations[jobs.AnnMachineID] != newID || fresh.Annotations[jobs.AnnDiskID] == pvSwapped.Annotations[jobs.AnnDiskID] {
			t.Errorf("new PV %s records machine %q and disk %q", fresh.Name, fresh.Annotations[jobs.AnnMachineID], fresh.Annotations[jobs.AnnDiskID])
		}
		old, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, pvSwapped.Name, metav1.GetOptions{})
		if err != nil || old.Spec.ClaimRef == nil || old.Labels[jobs.LabelMachineReplaced] != "true" {
			t.Fatalf("the old PV %s is not kept, bound and marked: %v %v", pvSwapped.Name, err, old)
		}
		warning := framework.EventQuery{Kind: "PersistentVolumeClaim", Name: "e2e-lpv-swapped", Reason: "MachineReplaced", Type: corev1.EventTypeWarning}
		if _, err := framework.WaitForEvent(ctx, c.Client, warning, 60*time.Second); err != nil {
			t.Error(err)
		}
		if pvc, err := c.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "e2e-lpv-swapped", metav1.GetOptions{}); err != nil ||
			pvc.Status.HealthStatus == nil || len(pvc.Status.HealthStatus.HealthConditions) == 0 ||
			pvc.Status.HealthStatus.HealthConditions[0].Status != corev1.VolumeHealthDataLoss {
			t.Errorf("claim e2e-lpv-swapped health status: %v %+v, want DataLoss", err, pvc)
		}
		expectRefused(ctx, t, c, "e2e-lpv-swapped", pvSwapped.Name)
		waitForMachineOf(ctx, t, c, pvKept.Name, newID)
		if got := readExt4File(ctx, t, n, swappedDev, "f"); got != "e2e-lpv-swapped" {
			t.Errorf("the replaced disk %s lost its data: f = %q", swappedDev, got)
		}
		t.Logf("disk %s replaced by %s at %s: PV %s kept and refused, PV %s published", swappedDev, newDev, swapped,
			pvSwapped.Name, fresh.Name)
	})
}

// waitForMachineOf waits until PV name records machine id, as the master
// writes it when it hands a PV to a new machine.
func waitForMachineOf(ctx context.Context, t *testing.T, c *framework.Cluster, name, id string) {
	t.Helper()
	var pv *corev1.PersistentVolume
	if err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
		var err error
		pv, err = c.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && pv.Annotations[jobs.AnnMachineID] == id && pv.Labels[jobs.LabelMachineReplaced] == ""
	}); err != nil {
		out, _ := c.Kubectl(ctx, "describe", "pv", name)
		t.Fatalf("PV %s is not handed to machine %s: %v\n%s", name, id, err, out)
	}
}

// waitForDiscoveryConsumed waits until every discovery Job of node that
// exists now has been consumed. The master deletes a discovery Job only
// after it has acted on its whole report (published, handed over or
// refused each volume), so whatever a report seen so far leads to has
// happened by then.
func waitForDiscoveryConsumed(ctx context.Context, t *testing.T, c *framework.Cluster, node string) {
	t.Helper()
	opts := metav1.ListOptions{LabelSelector: jobs.LabelRole + "=" + jobs.RoleDiscovery}
	list, err := c.Client.BatchV1().Jobs(lpvNamespace).List(ctx, opts)
	if err != nil {
		t.Fatalf("list discovery Jobs: %v", err)
	}
	pending := map[types.UID]string{}
	for _, j := range list.Items {
		if j.Annotations[jobs.AnnNode] == node && j.DeletionTimestamp == nil {
			pending[j.UID] = j.Name
		}
	}
	if err := framework.Poll(t.Context(), 120*time.Second, func(context.Context) bool {
		list, err := c.Client.BatchV1().Jobs(lpvNamespace).List(ctx, opts)
		if err != nil {
			return false
		}
		for _, j := range list.Items {
			if _, ok := pending[j.UID]; ok && j.DeletionTimestamp == nil {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("discovery Jobs %v of node %s not consumed: %v", pending, node, err)
	}
}

// readClaim runs a pod of claim that prints /data/f and checks it.
func readClaim(ctx context.Context, t *testing.T, c *framework.Cluster, claim, want string) {
	t.Helper()
	name := claim + "-read"
	pod := claimPodSpec(name, claim)
	pod.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "cat /data/f"}
	// The claim was refused while its PV was of the old machine; the
	// apiserver's admission sees the policy the master rewrote through its
	// own informer, a moment later. Dry runs, which admission checks like
	// creations, wait for it without starting a pod.
	var refusal error
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool {
		_, refusal = c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return refusal == nil
	}); err != nil {
		t.Fatalf("a pod of claim %s is still refused 60 s after its PV was handed to the new machine: %v", claim, refusal)
	}
	c.CreatePodOn(ctx, t, pod, "")
	defer c.DeletePod(t, name)
	c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodSucceeded)
	out, err := c.Kubectl(ctx, "logs", name)
	if err != nil || strings.TrimSpace(out) != want {
		t.Errorf("claim %s reads %q (%v), want %q", claim, out, err, want)
	}
}

// expectRefused checks that a new pod of claim is refused by the admission
// policy, naming the PV and the fix. The apiserver's admission sees the
// policy through its own informer: dry runs, which admission checks like
// creations, wait for it without starting a pod.
func expectRefused(ctx context.Context, t *testing.T, c *framework.Cluster, claim, pvName string) {
	t.Helper()
	var refusal error
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool {
		_, refusal = c.Client.CoreV1().Pods("default").Create(ctx, claimPodSpec(claim+"-again", claim),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return refusal != nil
	}); err != nil {
		t.Fatalf("a new pod of claim %s is not refused within 60 s: %v", claim, err)
	}
	_, refusal = c.Client.CoreV1().Pods("default").Create(ctx, claimPodSpec(claim+"-again", claim), metav1.CreateOptions{})
	if refusal == nil {
		c.DeletePod(t, claim+"-again")
	}
	if refusal == nil || !strings.Contains(refusal.Error(), "delete the claim") || !strings.Contains(refusal.Error(), pvName) {
		t.Fatalf("a new pod of claim %s: %v, want the admission policy's refusal naming PV %s and the fix", claim, refusal, pvName)
	}
	t.Logf("a new pod of the claim is refused: %v", refusal)
}

// replaceMachineID makes node n's kubelet report machine ID id: it
// bind-mounts a file over /etc/machine-id in the node's mount namespace
// (private to the node) and restarts the kubelet. The returned function
// unmounts it and restarts the kubelet again.
func replaceMachineID(ctx context.Context, t *testing.T, c *framework.Cluster, n *framework.Node, id string) func() {
	t.Helper()
	file := "/tmp/e2e-machine-id"
	if err := n.WriteFile(ctx, file, []byte(id+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	n.Run(ctx, t, "mount", "--bind", file, "/etc/machine-id")
	// The returned function restarts the kubelet again from a cleanup,
	// after the test's context is done.
	restart := restartComponentOn(context.Background(), t, c, n, "kubelet", nil)
	if err := framework.Poll(t.Context(), 60*time.Second, func(context.Context) bool {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil && node.Status.NodeInfo.MachineID == id
	}); err != nil {
		t.Fatalf("node %s does not report machine ID %s after its kubelet restarted: %v", n.Name, id, err)
	}
	return func() {
		n.Run(context.Background(), t, "umount", "/etc/machine-id")
		restart()
	}
}

func randomMachineID(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// claimPodSpec is a pod that uses claim at /data.
func claimPodSpec(name, claim string) *corev1.Pod {
	pod := framework.BusyboxPod(name, "sleep 3600")
	pod.Namespace = "default"
	pod.Spec.TerminationGracePeriodSeconds = new(int64)
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	return pod
}

// findOtherPVOn returns a provisioner PV of node's disk at hostPath other
// than the PV named not.
func findOtherPVOn(ctx context.Context, t testing.TB, c *framework.Cluster, node, hostPath, not string) *corev1.PersistentVolume {
	list, err := c.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: lpvManagedBy})
	if err != nil {
		t.Logf("list PVs: %v", err)
		return nil
	}
	for i, pv := range list.Items {
		if pv.Name != not && pv.Spec.Local != nil && pv.Spec.Local.Path == hostPath && pv.Annotations[jobs.AnnNode] == node &&
			pv.DeletionTimestamp == nil {
			return &list.Items[i]
		}
	}
	return nil
}
