package mountutilities

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/endpoints/request"
)

const (
	daemonSetController = "system:serviceaccount:kube-system:daemon-set-controller"
	fuseLabel           = "flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse"
	localLabel          = "mount.kubernetes.io/local-volume"
)

// TestAdmissionPolicyDecisions evaluates the shipped policy's CEL with the
// apiserver's own compiler and evaluator, on the requests it must admit or
// deny. Which requests reach it at all (namespace, resources, operations)
// is checked in TestAdmissionPolicyMatches.
func TestAdmissionPolicyDecisions(t *testing.T) {
	mountPod := testPod(map[string]string{"app": "mount-utilities", localLabel: "true", fuseLabel: "true"}, "mu:1")
	plain := testPod(map[string]string{"app": "x"}, "busybox")
	user1 := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	tests := []struct {
		name        string
		op          admission.Operation
		subresource string
		obj, old    *corev1.Pod
		user        user.Info
		wantDeny    string // a part of the message; "" admits
	}{
		{name: "the DaemonSet controller creates a mount pod", op: admission.Create, obj: mountPod,
			user: &user.DefaultInfo{Name: daemonSetController, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}}},
		{name: "a system:masters admin creates a mount pod", op: admission.Create, obj: mountPod,
			user: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}},
		{name: "a user creates a pod with an in-tree mount label", op: admission.Create, user: user1,
			obj: testPod(map[string]string{localLabel: "true"}, "busybox"), wantDeny: "may not set the mount label(s) " + localLabel},
		{name: "a user creates a pod with a flex mount label", op: admission.Create, user: user1,
			obj: testPod(map[string]string{fuseLabel: "true"}, "busybox"), wantDeny: fuseLabel + " on a pod in kube-mount"},
		{name: "a user creates a pod with both", op: admission.Create, obj: mountPod, user: user1,
			wantDeny: "user alice may not set the mount label(s) "},
		{name: "a user creates an unlabelled pod", op: admission.Create, obj: plain, user: user1},
		{name: "a user creates a pod with a mount label not set to true", op: admission.Create, user: user1,
			obj: testPod(map[string]string{localLabel: "false", fuseLabel: "yes"}, "busybox")},
		{name: "a user creates a pod with a look-alike label", op: admission.Create, user: user1,
			obj: testPod(map[string]string{"example.com/mount.kubernetes.io": "true", "xmount.kubernetes.io/local-volume": "true"}, "busybox")},
		{name: "the kubelet creates a mirror pod with a mount label", op: admission.Create, obj: mountPod,
			user: &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes"}}, wantDeny: "system:node:n1 may not set"},
		{name: "a user adds a mount label to a pod", op: admission.Update, user: user1,
			old: plain, obj: testPod(map[string]string{"app": "x", fuseLabel: "true"}, "busybox"), wantDeny: "may not set the mount label(s) " + fuseLabel},
		{name: "a user adds a mount label through pods/status", op: admission.Update, subresource: "status", user: user1,
			old: plain, obj: testPod(map[string]string{"app": "x", localLabel: "true"}, "busybox"), wantDeny: "may not set the mount label(s) " + localLabel},
		{name: "a user turns a mount label to true", op: admission.Update, user: user1,
			old: testPod(map[string]string{localLabel: "false"}, "busybox"), obj: testPod(map[string]string{localLabel: "true"}, "busybox"), wantDeny: localLabel},
		{name: "a user adds a second mount label to a mount pod", op: admission.Update, user: user1,
			old: testPod(map[string]string{localLabel: "true"}, "mu:1"), obj: mountPod, wantDeny: "label(s) " + fuseLabel + " on"},
		{name: "a user changes another label of a mount pod", op: admission.Update, user: user1,
			old: mountPod, obj: testPod(map[string]string{"app": "y", localLabel: "true", fuseLabel: "true"}, "mu:1")},
		{name: "a user removes a mount label", op: admission.Update, user: user1,
			old: mountPod, obj: testPod(map[string]string{localLabel: "true"}, "mu:1")},
		{name: "the kubelet updates a mount pod's status", op: admission.Update, subresource: "status", old: mountPod, obj: mountPod,
			user: &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes"}}},
		{name: "a user changes the image of a mount pod", op: admission.Update, user: user1,
			old: mountPod, obj: testPod(mountPod.Labels, "evil:1"), wantDeny: "may not change the images of mount pod kube-mount/p"},
		{name: "a user changes the image of an unlabelled pod", op: admission.Update, user: user1,
			old: plain, obj: testPod(plain.Labels, "busybox:2")},
		{name: "an admin changes the image of a mount pod", op: admission.Update, old: mountPod, obj: testPod(mountPod.Labels, "mu:2"),
			user: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}},
	}
	v := compileShippedPolicy(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			deny, msg := evaluate(t, v, tc.op, tc.subresource, tc.obj, tc.old, tc.user)
			switch {
			case tc.wantDeny == "" && deny:
				t.Errorf("denied: %s", msg)
			case tc.wantDeny != "" && !deny:
				t.Errorf("admitted, want a denial containing %q", tc.wantDeny)
			case tc.wantDeny != "" && !strings.Contains(msg, tc.wantDeny):
				t.Errorf("denied with %q, want it to contain %q", msg, tc.wantDeny)
			}
		})
	}
}

// compileShippedPolicy compiles the policy of admission-policy.yaml as the
// apiserver's ValidatingAdmissionPolicy plugin does (same environment,
// variables, validations and message expressions).
func compileShippedPolicy(t *testing.T) validating.Validator {
	t.Helper()
	policy, _ := shippedPolicy(t)
	compiler, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	decls := cel.OptionalVariableDeclarations{HasAuthorizer: true}
	var vars []cel.NamedExpressionAccessor
	for _, v := range policy.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(vars, decls, environment.StoredExpressions)
	var conds, msgs []cel.ExpressionAccessor
	for _, v := range policy.Spec.Validations {
		conds = append(conds, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		msgs = append(msgs, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
	}
	return validating.NewValidator(
		compiler.CompileCondition(conds, decls, environment.StoredExpressions), nil,
		compiler.CompileCondition(nil, decls, environment.StoredExpressions),
		compiler.CompileCondition(msgs, cel.OptionalVariableDeclarations{}, environment.StoredExpressions),
		policy.Spec.FailurePolicy, nil)
}

// evaluate returns whether the policy denies the request, and why. An
// evaluation error fails the test: with failurePolicy Fail it would deny
// every such request.
func evaluate(t *testing.T, v validating.Validator, op admission.Operation, sub string, obj, old *corev1.Pod, u user.Info) (bool, string) {
	t.Helper()
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	attr := admission.NewAttributesRecord(obj, oldObj, gvk, obj.Namespace, obj.Name, gvr, sub, op, nil, false, u)
	va := &admission.VersionedAttributes{Attributes: attr, VersionedObject: admission.NewLazyObject(obj), VersionedKind: gvk}
	if old != nil {
		va.VersionedOldObject = admission.NewLazyObject(old)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.Namespace, Labels: map[string]string{corev1.LabelMetadataName: obj.Namespace}}}
	ctx := request.WithUser(t.Context(), u)
	res := v.Validate(ctx, gvr, va, nil, ns, celconfig.RuntimeCELCostBudget, nil)
	var deny bool
	var msgs []string
	for _, d := range res.Decisions {
		if d.Evaluation == validating.EvalError {
			t.Fatalf("evaluation error: %s", d.Message)
		}
		if d.Action == validating.ActionDeny {
			deny = true
			msgs = append(msgs, d.Message)
		}
	}
	return deny, strings.Join(msgs, "; ")
}

func testPod(labels map[string]string, image string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: namespace, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

// shippedPolicy returns the policy and the binding of admission-policy.yaml.
func shippedPolicy(t *testing.T) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, o := range loadManifests(t) {
		switch o := o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			policies = append(policies, o)
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			bindings = append(bindings, o)
		}
	}
	if len(policies) != 1 || len(bindings) != 1 {
		t.Fatalf("%d ValidatingAdmissionPolicies and %d bindings, want one of each", len(policies), len(bindings))
	}
	return policies[0], bindings[0]
}
