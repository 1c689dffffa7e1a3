package mountutilities

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
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
		obj, old    object
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
			old: mountPod, obj: testPod(mountPod.Labels, "evil:1"), wantDeny: "may not change the images of, nor add ephemeral containers to, mount pod kube-mount/p"},
		{name: "a user changes the image of an unlabelled pod", op: admission.Update, user: user1,
			old: plain, obj: testPod(plain.Labels, "busybox:2")},
		{name: "an admin changes the image of a mount pod", op: admission.Update, old: mountPod, obj: testPod(mountPod.Labels, "mu:2"),
			user: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}},
		{name: "a user adds an ephemeral container to a mount pod", op: admission.Update, subresource: "ephemeralcontainers", user: user1,
			old: mountPod, obj: withEphemeral(mountPod, "mu:1"), wantDeny: "nor add ephemeral containers to, mount pod kube-mount/p"},
		{name: "a user adds an ephemeral container to an unlabelled pod", op: admission.Update, subresource: "ephemeralcontainers", user: user1,
			old: plain, obj: withEphemeral(plain, "busybox")},
		{name: "an admin adds an ephemeral container to a mount pod", op: admission.Update, subresource: "ephemeralcontainers",
			old: mountPod, obj: withEphemeral(mountPod, "busybox"), user: &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}},
	}
	v := compileShippedPolicy(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDecision(t, v, tc.op, tc.subresource, tc.obj, tc.old, tc.user, tc.wantDeny)
		})
	}
}

// TestAdmissionPolicyDaemonSetDecisions: the DaemonSet controller may
// create mount pods, so who writes a DaemonSet's pod template in the mount
// namespace is checked as who writes a pod there.
func TestAdmissionPolicyDaemonSetDecisions(t *testing.T) {
	mountDS := testDaemonSet(map[string]string{"app": "mount-utilities", localLabel: "true"}, "mu:1", nil)
	plainDS := testDaemonSet(map[string]string{"app": "x"}, "busybox", nil)
	user1 := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	gc := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:generic-garbage-collector"}
	withFinalizer := mountDS.DeepCopy()
	withFinalizer.Finalizers = []string{"foregroundDeletion"}
	relabelled := mountDS.DeepCopy()
	relabelled.Labels = map[string]string{"team": "storage"}
	tests := []struct {
		name     string
		op       admission.Operation
		obj, old object
		user     user.Info
		wantDeny string
	}{
		{name: "a user creates a DaemonSet with a mount label", op: admission.Create, obj: mountDS, user: user1,
			wantDeny: "user alice may not set the mount label(s) " + localLabel + " on the pod template of DaemonSet kube-mount/ds"},
		{name: "a user creates a DaemonSet with a flex mount label", op: admission.Create, user: user1,
			obj: testDaemonSet(map[string]string{fuseLabel: "true"}, "busybox", nil), wantDeny: fuseLabel + " on the pod template"},
		{name: "a user creates an unlabelled DaemonSet", op: admission.Create, obj: plainDS, user: user1},
		{name: "a system:masters admin creates the mount DaemonSet", op: admission.Create, obj: mountDS, user: admin},
		{name: "kubeadm's admin (kubeadm:cluster-admins) creates the mount DaemonSet", op: admission.Create, obj: mountDS,
			user: &user.DefaultInfo{Name: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}}},
		{name: "a user adds a mount label to a DaemonSet's template", op: admission.Update, old: plainDS, user: user1,
			obj: testDaemonSet(map[string]string{"app": "x", localLabel: "true"}, "busybox", nil), wantDeny: "may not set the mount label(s) " + localLabel},
		{name: "a user changes the image of the mount DaemonSet", op: admission.Update, old: mountDS, user: user1,
			obj: testDaemonSet(mountDS.Spec.Template.Labels, "evil:1", nil), wantDeny: "may not change the pod template of DaemonSet kube-mount/ds, whose pods are mount pods"},
		{name: "a user changes the command of the mount DaemonSet", op: admission.Update, old: mountDS, user: user1,
			obj: testDaemonSet(mountDS.Spec.Template.Labels, "mu:1", []string{"sh", "-c", "id"}), wantDeny: "may not change the pod template"},
		{name: "a user removes the mount label from a DaemonSet's template", op: admission.Update, old: mountDS, user: user1,
			obj: testDaemonSet(map[string]string{"app": "mount-utilities"}, "busybox", nil)},
		{name: "a user changes the template of an unlabelled DaemonSet", op: admission.Update, old: plainDS, user: user1,
			obj: testDaemonSet(plainDS.Spec.Template.Labels, "busybox:2", nil)},
		{name: "a user relabels the mount DaemonSet object itself", op: admission.Update, old: mountDS, obj: relabelled, user: user1},
		{name: "the garbage collector updates the mount DaemonSet's finalizers", op: admission.Update, old: withFinalizer, obj: mountDS, user: gc},
		{name: "an admin changes the image of the mount DaemonSet", op: admission.Update, old: mountDS, user: admin,
			obj: testDaemonSet(mountDS.Spec.Template.Labels, "mu:2", nil)},
	}
	v := compileShippedPolicy(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDecision(t, v, tc.op, "", tc.obj, tc.old, tc.user, tc.wantDeny)
		})
	}
}

// object is a pod or a DaemonSet under admission.
type object interface {
	runtime.Object
	metav1.Object
}

func checkDecision(t *testing.T, v validating.Validator, op admission.Operation, sub string, obj, old object, u user.Info, wantDeny string) {
	t.Helper()
	deny, msg := evaluate(t, v, op, sub, obj, old, u)
	switch {
	case wantDeny == "" && deny:
		t.Errorf("denied: %s", msg)
	case wantDeny != "" && !deny:
		t.Errorf("admitted, want a denial containing %q", wantDeny)
	case wantDeny != "" && !strings.Contains(msg, wantDeny):
		t.Errorf("denied with %q, want it to contain %q", msg, wantDeny)
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
func evaluate(t *testing.T, v validating.Validator, op admission.Operation, sub string, obj, old object, u user.Info) (bool, string) {
	t.Helper()
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	if _, ok := obj.(*appsv1.DaemonSet); ok {
		gvk, gvr = appsv1.SchemeGroupVersion.WithKind("DaemonSet"), appsv1.SchemeGroupVersion.WithResource("daemonsets")
	}
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	attr := admission.NewAttributesRecord(obj, oldObj, gvk, obj.GetNamespace(), obj.GetName(), gvr, sub, op, nil, false, u)
	va := &admission.VersionedAttributes{Attributes: attr, VersionedObject: admission.NewLazyObject(obj), VersionedKind: gvk}
	if old != nil {
		va.VersionedOldObject = admission.NewLazyObject(old)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace(), Labels: map[string]string{corev1.LabelMetadataName: obj.GetNamespace()}}}
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

// withEphemeral returns a copy of pod with an ephemeral container added, as
// kubectl debug sends it to pods/ephemeralcontainers.
func withEphemeral(pod *corev1.Pod, image string) *corev1.Pod {
	p := pod.DeepCopy()
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: image}})
	return p
}

// testDaemonSet is a DaemonSet in kube-mount whose pod template has the
// labels, one container with the image and the command.
func testDaemonSet(templateLabels map[string]string, image string, command []string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: templateLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image, Command: command}}},
			},
		},
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
