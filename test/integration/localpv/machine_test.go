package localpv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims/blockedclaimstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// setMachine sets the machine identity a node's kubelet reports.
func (e *env) setMachine(t *testing.T, name, machineID, systemUUID string) {
	t.Helper()
	nodes := e.cp.Client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.NodeInfo.MachineID, n.Status.NodeInfo.SystemUUID = machineID, systemUUID
		_, err = nodes.UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting the machine of node %s: %v", name, err)
	}
}

// bindPV does what the PV controller does when it binds a claim.
func (e *env) bindPV(t *testing.T, name, claim string) {
	t.Helper()
	e.setClaim(t, name, claim, corev1.VolumeBound)
}

func claimPod(name, claim string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: new(bool),
		Containers:                   []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

// File system identities: the old machine's disks (A1, A2) and a new disk
// (B1) at A1's path.
var (
	diskA1 = identity.FS("0b6c3f9e-1d2a-4c5b-9e8f-7a6b5c4d3e21", 1, []byte{2, 0, 0, 0})
	diskA2 = identity.FS("5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716", 1, []byte{2, 0, 0, 0})
	diskB1 = identity.FS("c0ffee00-1234-4abc-8def-0123456789ab", 1, []byte{2, 0, 0, 0})
)

// withIDs gives the class's volumes the identities, in order.
func withIDs(r *report.Report, ids ...identity.ID) *report.Report {
	for i := range r.Classes[0].Volumes {
		r.Classes[0].Volumes[i].ID = ids[i]
	}
	return r
}

func machinePV(node, entry, machineID, systemUUID string) string {
	return naming.PVNameForID(naming.MachineVolumeID(node, fastDir+"/"+entry, machineID, systemUUID))
}

// TestReplacedMachine: when another machine takes over a node name, the old
// machine's unused PV is deleted, its bound PV is kept, marked and warned
// about, the shipped admission policy refuses new pods of its claim, a disk
// the new machine reports at the bound PV's path that provably differs (its
// file system UUID) becomes a new PV, and the same disk at the unused PV's
// path is published again for the new machine.
func TestReplacedMachine(t *testing.T) {
	e, sim := newMasterEnv(t)
	policy, err := os.ReadFile(filepath.Join(deployDir, "admission-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e.apply(t, policy)
	sim.setDisks("node-a", withIDs(disks("node-a", "vol1", "vol2"), diskA1, diskA2))
	e.createNode(t, "node-a")
	e.setMachine(t, "node-a", "m1", "u1")
	if _, err := e.cp.Client.CoreV1().ServiceAccounts("default").Create(t.Context(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e.startMaster(t, time.Second)

	bound, unused := machinePV("node-a", "vol1", "m1", "u1"), machinePV("node-a", "vol2", "m1", "u1")
	pv := e.waitForPV(t, bound, "")
	if pv.Annotations[jobs.AnnMachineID] != "m1" || pv.Annotations[jobs.AnnSystemUUID] != "u1" {
		t.Fatalf("PV does not record machine m1/u1: %v", pv.Annotations)
	}
	unusedUID := e.waitForPV(t, unused, "").UID
	e.bindPV(t, bound, "data-db-0")
	if _, err := e.cp.Client.CoreV1().Pods("default").Create(t.Context(), claimPod("db-0", "data-db-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	sim.setDisks("node-a", withIDs(disks("node-a", "vol1", "vol2"), diskB1, diskA2))
	e.setMachine(t, "node-a", "m2", "u2")
	e.waitForEvent(t, "PersistentVolume", bound, "MachineReplaced", "is kept and new pods using its claim are refused")
	e.waitForEvent(t, "PersistentVolumeClaim", "data-db-0", "MachineReplaced", bound)
	e.waitForEvent(t, "Node", "node-a", "MachineReplaced", `machineID "m2"`)
	waitForGone(t, "unused PV of the old machine", unusedUID, e.pvGetter(unused))
	e.waitForPV(t, machinePV("node-a", "vol1", "m2", "u2"), "")
	e.waitForPV(t, machinePV("node-a", "vol2", "m2", "u2"), "")
	pv, err = e.cp.Client.CoreV1().PersistentVolumes().Get(t.Context(), bound, metav1.GetOptions{})
	if err != nil || pv.Labels[jobs.LabelMachineReplaced] != "true" || pv.Annotations[jobs.AnnMachineReplaced] == "" {
		t.Fatalf("bound PV not kept and marked: %v %v", pv, err)
	}

	e.waitForRefusal(t, "db-0-again", "data-db-0", bound)
	if _, err := e.cp.Client.CoreV1().Pods("default").Create(t.Context(), claimPod("other", "data-other"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod of another claim was refused: %v", err)
	}

	// An operator uninstalls and reinstalls the policy (kubectl delete -f,
	// kubectl create -f): policy and binding go and come back together, as
	// in kubernetes/kubernetes#133827. The master writes the claims again.
	policies := e.cp.Client.AdmissionregistrationV1()
	if err := policies.ValidatingAdmissionPolicyBindings().Delete(t.Context(), controller.ReplacedMachineAdmissionPolicy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := policies.ValidatingAdmissionPolicies().Delete(t.Context(), controller.ReplacedMachineAdmissionPolicy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.apply(t, policy)
	e.waitForRefusal(t, "db-0-reinstalled", "data-db-0", bound)
}

// waitForRefusal waits until the master has written claim into the
// replaced-machine policy, then until the apiserver refuses a new pod of
// the claim with the policy's message naming the PV and the fix.
func (e *env) waitForRefusal(t *testing.T, pod, claim, pv string) {
	t.Helper()
	key := blockedclaims.Key("default", claim)
	poll(t, "the claim written into the policy", func(ctx context.Context) (bool, error) {
		p, err := e.cp.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx,
			controller.ReplacedMachineAdmissionPolicy, metav1.GetOptions{})
		if err != nil || len(p.Spec.Variables) == 0 {
			return false, nil
		}
		got := blockedclaimstest.PVNames(blockedclaimstest.Eval(t, p.Spec.Variables[0].Expression))
		return len(got) == 1 && got[key] == pv, nil
	})
	poll(t, "a pod of the blocked claim refused", func(ctx context.Context) (bool, error) {
		_, err := e.cp.Client.CoreV1().Pods("default").Create(ctx, claimPod(pod, claim), metav1.CreateOptions{})
		if err == nil {
			_ = e.cp.Client.CoreV1().Pods("default").Delete(ctx, pod, metav1.DeleteOptions{})
			return false, nil
		}
		if !strings.Contains(err.Error(), "delete the claim") || !strings.Contains(err.Error(), pv) {
			t.Fatalf("refused for another reason: %v", err)
		}
		return true, nil
	})
}
