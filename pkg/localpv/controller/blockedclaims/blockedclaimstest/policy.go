package blockedclaimstest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
)

// Policy is the shipped replaced-machine policy as far as the master reads
// it: its blockedClaims variable, empty as applied, and one more variable.
func Policy() *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: blockedclaims.DefaultPolicyName},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{Variables: []admissionv1.Variable{
			{Name: blockedclaims.Variable, Expression: "{}"},
			{Name: "blocked", Expression: "[]"},
		}},
	}
}

var mapType = reflect.TypeOf(map[string]string{})

// Eval evaluates a blockedClaims expression with CEL and returns the map
// it holds; it fails the test if the expression is not a map of strings.
func Eval(t testing.TB, expr string) map[string]string {
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

// PVNames maps each blocked claim to the PV its value names
// (blockedclaims.Value: "PV <name>, because <cause>").
func PVNames(claims map[string]string) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		name, _, _ := strings.Cut(strings.TrimPrefix(v, "PV "), ", because ")
		out[k] = name
	}
	return out
}
