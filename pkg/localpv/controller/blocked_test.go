package controller

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims/blockedclaimstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// policyClaims evaluates the policy's blockedClaims expression with CEL, as
// the apiserver does, and returns the PV each claim is blocked for.
func (f *fixture) policyClaims() map[string]string {
	f.t.Helper()
	return blockedclaimstest.PVNames(f.policyCauses())
}

// policyCauses is the policy's blockedClaims as written: each claim's PV
// and cause.
func (f *fixture) policyCauses() map[string]string {
	f.t.Helper()
	p, err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(f.t.Context(), ReplacedMachineAdmissionPolicy, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return blockedclaimstest.Eval(f.t, p.Spec.Variables[0].Expression)
}

// replacedFixture is a node a whose machine changed under a bound PV.
func replacedFixture(t *testing.T) (*fixture, string) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"), newClass("fast", v1.PersistentVolumeReclaimDelete))
	f.discover("a", fsReport("a", "vol1"))
	old := naming.PVNameForID(naming.MachineVolumeID("a", vol1, "m1", "u1"))
	f.setPhase(old, v1.VolumeBound, true)
	f.setMachine("a", "m2", "u2")
	f.sync(nodeKey("a"))
	return f, old
}

func TestBlockedClaimsWrittenAgainAfterReapply(t *testing.T) {
	f, old := replacedFixture(t)
	if b := f.blockedClaims(); b[blockedclaims.Key("default", "claim")] != old {
		t.Fatalf("setup: blocked claims %v", b)
	}
	// kubectl apply of the shipped file resets the variable to {}.
	if _, err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(t.Context(),
		blockedclaimstest.Policy(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.drain()
	f.c.onPolicy(blockedclaimstest.Policy())
	if f.c.queue.Len() != 1 {
		t.Fatal("a change of the policy did not queue the blocked claims")
	}
	f.drain()
	if b := f.policyClaims(); b[blockedclaims.Key("default", "claim")] != old {
		t.Errorf("blocked claims after a re-apply: %v, want default.claim → %s", b, old)
	}
	other := blockedclaimstest.Policy()
	other.Name = "someone-elses"
	f.c.onPolicy(other)
	if f.c.queue.Len() != 0 {
		t.Error("another policy's change queued work")
	}
}
