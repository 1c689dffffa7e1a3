package controller

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
)

// testPolicy is the shipped replaced-machine policy as far as the master
// reads it: its blockedClaims variable, empty as applied.
func testPolicy() *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ReplacedMachineAdmissionPolicy},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{Variables: []admissionv1.Variable{
			{Name: BlockedClaimsVariable, Expression: "{}"},
			{Name: "blocked", Expression: "[]"},
		}},
	}
}

// policyClaims evaluates the policy's blockedClaims expression with CEL, as
// the apiserver does.
func (f *fixture) policyClaims() map[string]string {
	f.t.Helper()
	p, err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(f.t.Context(), ReplacedMachineAdmissionPolicy, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return evalClaims(f.t, p.Spec.Variables[0].Expression)
}

func evalClaims(t *testing.T, expr string) map[string]string {
	t.Helper()
	env, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("expression %q does not compile: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	val, _, err := prg.Eval(map[string]any{})
	if err != nil {
		t.Fatalf("expression %q: %v", expr, err)
	}
	native, err := val.ConvertToNative(mapType)
	if err != nil {
		t.Fatalf("expression %q is not a map of strings: %v", expr, err)
	}
	return native.(map[string]string)
}

var mapType = reflect.TypeOf(map[string]string{})

func TestBlockedClaimsExpression(t *testing.T) {
	tests := []struct {
		name   string
		claims map[string]string
		want   string
	}{
		{name: "none", claims: map[string]string{}, want: "{}"},
		{name: "one", claims: map[string]string{"default.data-db-0": "local-pv-1"}, want: `{"default.data-db-0": "local-pv-1"}`},
		{name: "keys in order", claims: map[string]string{"b.c": "pv-2", "a.c": "pv-1"}, want: `{"a.c": "pv-1", "b.c": "pv-2"}`},
		{name: "quotes and backslashes are escaped", claims: map[string]string{`a."x\`: `p'v`}, want: `{"a.\"x\\": "p'v"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := BlockedClaimsExpression(tc.claims)
			if got != tc.want {
				t.Fatalf("expression = %s, want %s", got, tc.want)
			}
			back := evalClaims(t, got)
			if len(back) != len(tc.claims) {
				t.Fatalf("CEL read back %v, want %v", back, tc.claims)
			}
			for k, v := range tc.claims {
				if back[k] != v {
					t.Errorf("CEL read back %q → %q, want %q", k, back[k], v)
				}
			}
		})
	}
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

func TestBlockedClaimsPolicyProblems(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(f *fixture)
		wantErr string
	}{
		{name: "the policy was deleted", wantErr: "not found", breakIt: func(f *fixture) {
			if err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(f.t.Context(),
				ReplacedMachineAdmissionPolicy, metav1.DeleteOptions{}); err != nil {
				f.t.Fatal(err)
			}
		}},
		{name: "the policy has no blockedClaims variable", wantErr: "has no variable blockedClaims", breakIt: func(f *fixture) {
			p := testPolicy()
			p.Spec.Variables = p.Spec.Variables[1:]
			if _, err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(f.t.Context(), p, metav1.UpdateOptions{}); err != nil {
				f.t.Fatal(err)
			}
		}},
		{name: "the apiserver refuses the update", wantErr: "failed to write the blocked claims", breakIt: func(f *fixture) {
			f.kube.PrependReactor("update", "validatingadmissionpolicies", func(core.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("forbidden")
			})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, old := replacedFixture(t)
			f.events()
			tc.breakIt(f)
			f.syncStores()
			err := f.c.sync(t.Context(), blockedClaimsKey)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("sync error = %v, want one with %q", err, tc.wantErr)
			}
			if n := f.countEvents("ClaimNotBlocked"); n != 1 {
				t.Errorf("%d ClaimNotBlocked events, want one on PV %s", n, old)
			}
		})
	}
}

func TestBlockedClaimsWrittenAgainAfterReapply(t *testing.T) {
	f, old := replacedFixture(t)
	if b := f.blockedClaims(); b[BlockedClaimKey("default", "claim")] != old {
		t.Fatalf("setup: blocked claims %v", b)
	}
	// kubectl apply of the shipped file resets the variable to {}.
	if _, err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(t.Context(), testPolicy(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.drain()
	f.c.onPolicy(testPolicy())
	if f.c.queue.Len() != 1 {
		t.Fatal("a change of the policy did not queue the blocked claims")
	}
	f.drain()
	if b := f.policyClaims(); b[BlockedClaimKey("default", "claim")] != old {
		t.Errorf("blocked claims after a re-apply: %v, want default.claim → %s", b, old)
	}
	other := testPolicy()
	other.Name = "someone-elses"
	f.c.onPolicy(other)
	if f.c.queue.Len() != 0 {
		t.Error("another policy's change queued work")
	}
}

// TestNoPolicyNeededWithoutBlockedClaims: with no claim to block, a missing
// policy is no error and nothing is written.
func TestNoPolicyNeededWithoutBlockedClaims(t *testing.T) {
	f := newFixture(t, nil, machineNode("a", "m1", "u1"))
	if err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(t.Context(),
		ReplacedMachineAdmissionPolicy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncStores()
	if _, err := f.c.policyLister.Get(ReplacedMachineAdmissionPolicy); !apierrors.IsNotFound(err) {
		t.Fatalf("setup: the master's cache still has the policy (err %v)", err)
	}
	f.kube.ClearActions()
	if err := f.c.sync(t.Context(), blockedClaimsKey); err != nil {
		t.Errorf("sync without the policy and without blocked claims: %v", err)
	}
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "validatingadmissionpolicies" {
			t.Errorf("the master wrote the policy: %s", a.GetVerb())
		}
	}
}
