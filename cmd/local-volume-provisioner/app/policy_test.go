package app

import (
	"testing"

	"github.com/google/cel-go/cel"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// TestPolicySemantics evaluates the shipped policy's CEL with plain values
// standing in for the admission request. The integration test against a real
// apiserver is the authority; this catches logic slips early.
func TestPolicySemantics(t *testing.T) {
	var policy *admissionv1.ValidatingAdmissionPolicy
	for _, o := range loadManifests(t) {
		if p, ok := o.(*admissionv1.ValidatingAdmissionPolicy); ok {
			policy = p
		}
	}
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

func eval(t *testing.T, expr string, vars map[string]interface{}) interface{} {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType), cel.Variable("variables", cel.DynType))
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
