package app

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
)

// TestPolicySemantics evaluates the shipped policy's CEL with plain values
// standing in for the admission request. The integration test against a real
// apiserver is the authority; this catches logic slips early.
func TestPolicySemantics(t *testing.T) {
	policy := shippedPolicy(t, "local-volume-provisioner-watcher-own-node")
	watcherUser := "system:serviceaccount:local-volume-provisioner:local-volume-provisioner-watcher"
	tests := []struct {
		name      string
		user      string
		nodeClaim []string
		op        string
		object    string
		wantAllow bool
	}{
		{name: "watcher writes its own node", user: watcherUser, nodeClaim: []string{"node-a"}, op: "UPDATE", object: "node-a", wantAllow: true},
		{name: "watcher creates its own node", user: watcherUser, nodeClaim: []string{"node-a"}, op: "CREATE", object: "node-a", wantAllow: true},
		{name: "watcher of node A denied on node B", user: watcherUser, nodeClaim: []string{"node-a"}, op: "UPDATE", object: "node-b"},
		{name: "watcher of node A cannot delete node B", user: watcherUser, nodeClaim: []string{"node-a"}, op: "DELETE", object: "node-b"},
		{name: "watcher token without node claim denied", user: watcherUser, op: "UPDATE", object: "node-a"},
		{name: "other users are not matched", user: "admin", op: "UPDATE", object: "node-b", wantAllow: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]interface{}{}
			if tc.nodeClaim != nil {
				extra["authentication.kubernetes.io/node-name"] = tc.nodeClaim
			}
			obj := map[string]interface{}{"metadata": map[string]interface{}{"name": tc.object}}
			vars := map[string]interface{}{
				"request": map[string]interface{}{"operation": tc.op,
					"userInfo": map[string]interface{}{"username": tc.user, "extra": extra}},
				"object": obj, "oldObject": obj, "variables": map[string]interface{}{},
			}
			if tc.op == "DELETE" {
				vars["object"] = nil
			}
			if !evalBool(t, policy.Spec.MatchConditions[0].Expression, vars) {
				if !tc.wantAllow {
					t.Fatal("request not matched by the policy")
				}
				return
			}
			computed := map[string]interface{}{}
			for _, v := range policy.Spec.Variables {
				computed[v.Name] = eval(t, v.Expression, vars)
				vars["variables"] = computed
			}
			allowed := true
			for _, v := range policy.Spec.Validations {
				allowed = allowed && evalBool(t, v.Expression, vars)
			}
			if allowed != tc.wantAllow {
				t.Fatalf("allowed = %v, want %v", allowed, tc.wantAllow)
			}
		})
	}
}

func shippedPolicy(t *testing.T, name string) *admissionv1.ValidatingAdmissionPolicy {
	t.Helper()
	for _, o := range loadManifests(t) {
		if p, ok := o.(*admissionv1.ValidatingAdmissionPolicy); ok && p.Name == name {
			return p
		}
	}
	t.Fatalf("no ValidatingAdmissionPolicy %s in the manifests", name)
	return nil
}

// TestReplacedMachinePolicySemantics evaluates the policy that refuses pods
// of blocked claims, with its blockedClaims variable as the master writes it.
func TestReplacedMachinePolicySemantics(t *testing.T) {
	policy := shippedPolicy(t, "local-volume-provisioner-replaced-machine-claims")
	if v := policy.Spec.Variables[0]; v.Name != blockedclaims.Variable || v.Expression != "{}" {
		t.Fatalf("the policy's first variable is %s = %q, want %s = {} as shipped", v.Name, v.Expression, blockedclaims.Variable)
	}
	claimVol := func(claim string) map[string]interface{} {
		return map[string]interface{}{"name": "v", "persistentVolumeClaim": map[string]interface{}{"claimName": claim}}
	}
	blocked := map[string]string{"apps.data-db-0": "local-pv-0123", "apps.data-db-9": "local-pv-9999"}
	tests := []struct {
		name      string
		namespace string
		volumes   []interface{}
		claims    map[string]string
		wantAllow bool
	}{
		{name: "a pod of a blocked claim is refused", namespace: "apps", volumes: []interface{}{claimVol("data-db-0")}, claims: blocked},
		{name: "a pod with a blocked claim among others is refused", namespace: "apps",
			volumes: []interface{}{map[string]interface{}{"name": "tmp", "emptyDir": map[string]interface{}{}}, claimVol("data-db-0")}, claims: blocked},
		{name: "the same claim name in another namespace is allowed", namespace: "other", volumes: []interface{}{claimVol("data-db-0")},
			claims: blocked, wantAllow: true},
		{name: "a pod of another claim is allowed", namespace: "apps", volumes: []interface{}{claimVol("data-db-1")}, claims: blocked, wantAllow: true},
		{name: "a pod without volumes is allowed", namespace: "apps", claims: blocked, wantAllow: true},
		{name: "the policy as shipped allows all", namespace: "apps", volumes: []interface{}{claimVol("data-db-0")}, wantAllow: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]interface{}{}
			if tc.volumes != nil {
				spec["volumes"] = tc.volumes
			}
			vars := map[string]interface{}{"request": map[string]interface{}{"namespace": tc.namespace, "operation": "CREATE"},
				"object": map[string]interface{}{"spec": spec}, "variables": map[string]interface{}{}}
			computed := map[string]interface{}{}
			for _, v := range policy.Spec.Variables {
				expr := v.Expression
				if v.Name == blockedclaims.Variable && tc.claims != nil {
					expr = blockedclaims.Expression(tc.claims)
				}
				computed[v.Name] = eval(t, expr, vars)
				vars["variables"] = computed
			}
			allowed := evalBool(t, policy.Spec.Validations[0].Expression, vars)
			if allowed != tc.wantAllow {
				t.Fatalf("allowed = %v, want %v", allowed, tc.wantAllow)
			}
			if !allowed {
				msg, _ := eval(t, policy.Spec.Validations[0].MessageExpression, vars).(string)
				// The value names the PV and its cause with the fix
				// (pvstate.Cause); the message carries it whole.
				if !strings.Contains(msg, "local-pv-0123") || !strings.Contains(msg, "data-db-0") {
					t.Errorf("message %q does not name the claim and the blocked value", msg)
				}
			}
		})
	}
}

func eval(t *testing.T, expr string, vars map[string]interface{}) interface{} {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType), cel.Variable("variables", cel.DynType), cel.Variable("params", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	return out.Value()
}

func evalBool(t *testing.T, expr string, vars map[string]interface{}) bool {
	t.Helper()
	b, ok := eval(t, expr, vars).(bool)
	if !ok {
		t.Fatalf("%q is not boolean", expr)
	}
	return b
}
