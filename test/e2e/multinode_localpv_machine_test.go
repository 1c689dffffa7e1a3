//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestMultiNodeLocalPVReplacedMachine simulates a new machine joining under
// a used node name: with a PV bound and in use on node B, B's kubelet
// restarts reading another /etc/machine-id (bind-mounted over the file in
// B's own mount namespace), so the Node keeps its name and reports another
// machineID. The master keeps and marks the bound PV with Warning Events on
// it and on the pod, the admission policy refuses a new pod of the claim,
// and the disk is published again as a new PV with a new name.
func TestMultiNodeLocalPVReplacedMachine(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	n := c.Nodes[1]
	if n.OnHost() {
		t.Skipf("node %s is the host, whose machine identity the test must not change", n.Name)
	}
	d := newLPVDisksOn(t, n)
	vol := d.addDir("vol0")
	deployLPV(ctx, t, c, d)
	old := waitForPVOn(ctx, t, c, n.Name, vol, "", corev1.VolumeAvailable)
	node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if old.Annotations[jobs.AnnMachineID] == "" || old.Annotations[jobs.AnnMachineID] != node.Status.NodeInfo.MachineID {
		t.Fatalf("PV %s records machine ID %q, node %s reports %q", old.Name, old.Annotations[jobs.AnnMachineID],
			n.Name, node.Status.NodeInfo.MachineID)
	}
	name := "e2e-lpv-machine"
	c.CreatePodOn(ctx, t, claimPod(ctx, t, c, name, old.Name, "echo old-machine > /data/f && sync && sleep 3600"), "")
	c.WaitForPod(ctx, t, name, 120*time.Second, corev1.PodRunning)

	newID := randomMachineID(t)
	restore := replaceMachineID(ctx, t, c, n, newID)
	t.Cleanup(func() {
		c.DeletePod(t, name)
		c.DeletePod(t, name+"-again")
		_, _ = c.Kubectl(context.Background(), "delete", "pvc", name, "--wait", "--timeout=60s")
		restore()
	})

	if err := poll(t, 90*time.Second, func() bool {
		pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, old.Name, metav1.GetOptions{})
		return err == nil && pv.Labels[jobs.LabelMachineReplaced] == "true" && pv.Spec.ClaimRef != nil
	}); err != nil {
		out, _ := c.Kubectl(ctx, "describe", "pv", old.Name)
		t.Fatalf("bound PV %s not kept and marked after the machine changed: %v\n%s", old.Name, err, out)
	}
	for _, obj := range []struct{ kind, name string }{{"PersistentVolume", old.Name}, {"Pod", name}} {
		waitForWarning(ctx, t, c, obj.kind, obj.name, "MachineReplaced")
	}

	var fresh *corev1.PersistentVolume
	if err := poll(t, 120*time.Second, func() bool {
		fresh = findOtherPVOn(ctx, t, c, n.Name, vol, old.Name)
		return fresh != nil && fresh.Status.Phase == corev1.VolumeAvailable
	}); err != nil {
		out, _ := c.Kubectl(ctx, "get", "pv", "-o", "wide")
		t.Fatalf("the new machine's disk is not published as a new PV: %v\n%s", err, out)
	}
	t.Logf("machine %s → %s: PV %s kept and marked, disk published again as PV %s", old.Annotations[jobs.AnnMachineID], newID,
		old.Name, fresh.Name)
	if fresh.Annotations[jobs.AnnMachineID] != newID {
		t.Errorf("new PV %s records machine %q, want %q", fresh.Name, fresh.Annotations[jobs.AnnMachineID], newID)
	}

	want := controller.BlockedClaimsExpression(map[string]string{controller.BlockedClaimKey("default", name): old.Name})
	if err := poll(t, 60*time.Second, func() bool {
		p, err := c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx,
			controller.ReplacedMachineAdmissionPolicy, metav1.GetOptions{})
		return err == nil && len(p.Spec.Variables) > 0 && p.Spec.Variables[0].Expression == want
	}); err != nil {
		t.Fatalf("claim %s is not in the admission policy's blocked claims: %v", name, err)
	}
	c.DeletePod(t, name)
	// The apiserver's admission sees the policy through its own informer:
	// dry runs, which admission checks like creations, wait for it without
	// starting a pod on the new disk. Earlier tests of the suite have
	// deleted and re-created the policy and its binding, which once left a
	// params-based policy admitting everything (kubernetes/kubernetes#133827).
	var refusal error
	if err := poll(t, 60*time.Second, func() bool {
		_, refusal = c.Client.CoreV1().Pods("default").Create(ctx, claimPodSpec(name+"-again", name),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return refusal != nil
	}); err != nil {
		t.Fatalf("the admission policy did not refuse a pod of claim %s within 60 s although it lists the claim: %v", name, err)
	}
	_, refusal = c.Client.CoreV1().Pods("default").Create(ctx, claimPodSpec(name+"-again", name), metav1.CreateOptions{})
	if refusal == nil || !strings.Contains(refusal.Error(), "delete the claim") || !strings.Contains(refusal.Error(), old.Name) {
		t.Fatalf("a new pod of claim %s: %v, want the admission policy's refusal naming PV %s and the fix", name, refusal, old.Name)
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
	if err := os.WriteFile(n.HostPath(file), []byte(id+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	n.Run(ctx, t, "mount", "--bind", file, "/etc/machine-id")
	// The returned function restarts the kubelet again from a cleanup,
	// after the test's context is done.
	restart := restartComponentOn(context.Background(), t, c, n, "kubelet", nil)
	if err := poll(t, 60*time.Second, func() bool {
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

// waitForWarning waits for a Warning Event with reason on an object in the
// default namespace or cluster scope.
func waitForWarning(ctx context.Context, t *testing.T, c *framework.Cluster, kind, name, reason string) {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name, "reason": reason, "type": corev1.EventTypeWarning}.AsSelector().String()
	if err := poll(t, 60*time.Second, func() bool {
		evs, err := c.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		return err == nil && len(evs.Items) > 0
	}); err != nil {
		t.Errorf("no Warning %s Event on %s %s: %v", reason, kind, name, err)
	}
}
