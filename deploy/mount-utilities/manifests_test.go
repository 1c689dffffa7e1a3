// Package mountutilities checks the manifests of this directory: the
// controller-manager's rights in kube-mount, the DaemonSet's mount labels,
// and the admission policy on who may create mount pods.
package mountutilities

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

const (
	namespace = "kube-mount"
	roleName  = "nodeplug:mount-pod-exec"
	imageArgs = "../../build/mount-utilities/image.args"
)

// podServedDrivers are the flex drivers the mount-utilities image serves.
var podServedDrivers = []string{"nodeplug.io/fuse", "nodeplug.io/attach"}

// loadManifests decodes every document of every manifest in this directory
// and checks that kustomization.yaml lists each manifest.
func loadManifests(t *testing.T) []runtime.Object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var out []runtime.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "kustomization.yaml" {
			for _, other := range files {
				if other != f && !bytes.Contains(b, []byte("\n- "+other+"\n")) {
					t.Errorf("kustomization.yaml does not list %s", other)
				}
			}
			continue
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, obj)
		}
	}
	return out
}

// rule is one (API group, resource, verb) a Role grants.
type rule struct{ group, resource, verb string }

func TestControllerManagerRBAC(t *testing.T) {
	var roles []*rbacv1.Role
	var bindings []*rbacv1.RoleBinding
	for _, o := range loadManifests(t) {
		switch o := o.(type) {
		case *rbacv1.Role:
			roles = append(roles, o)
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o)
		case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			t.Errorf("%T in deploy/mount-utilities: the controller-manager's rights must stay in %s", o, namespace)
		}
	}
	if len(roles) != 1 || len(bindings) != 1 {
		t.Fatalf("%d Roles and %d RoleBindings, want one of each", len(roles), len(bindings))
	}

	role := roles[0]
	if role.Name != roleName || role.Namespace != namespace {
		t.Errorf("Role %s/%s, want %s/%s", role.Namespace, role.Name, namespace, roleName)
	}
	var got []rule
	for _, r := range role.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: resourceNames or nonResourceURLs, want neither", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					got = append(got, rule{g, res, v})
				}
			}
		}
	}
	want := []rule{
		{"", "pods", "get"}, {"", "pods", "list"}, {"", "pods", "watch"},
		{"", "pods/exec", "create"}, {"", "pods/exec", "get"},
	}
	slices.SortFunc(got, compareRules)
	if !slices.Equal(got, want) {
		t.Errorf("Role %s grants %v, want exactly %v", role.Name, got, want)
	}

	b := bindings[0]
	if b.Namespace != namespace {
		t.Errorf("RoleBinding %s is in %q, want %s", b.Name, b.Namespace, namespace)
	}
	if b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName}) {
		t.Errorf("RoleBinding %s refers to %+v, want Role %s", b.Name, b.RoleRef, roleName)
	}
	wantSubjects := []rbacv1.Subject{
		{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:kube-controller-manager"},
		{Kind: rbacv1.ServiceAccountKind, Name: "nodeplug-mount-pods", Namespace: "kube-system"},
	}
	if !slices.Equal(b.Subjects, wantSubjects) {
		t.Errorf("RoleBinding %s binds %+v, want exactly %+v", b.Name, b.Subjects, wantSubjects)
	}
}

func compareRules(a, b rule) int {
	return strings.Compare(a.group+"\x00"+a.resource+"\x00"+a.verb, b.group+"\x00"+b.resource+"\x00"+b.verb)
}

func TestDaemonSetServesDrivers(t *testing.T) {
	var ds *appsv1.DaemonSet
	var ns *v1.Namespace
	for _, o := range loadManifests(t) {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			ds = o
		case *v1.Namespace:
			ns = o
		}
	}
	if ds == nil || ns == nil {
		t.Fatalf("DaemonSet %v, Namespace %v: want both", ds != nil, ns != nil)
	}
	if ns.Name != namespace || ds.Namespace != namespace {
		t.Errorf("Namespace %s, DaemonSet in %s; want both %s", ns.Name, ds.Namespace, namespace)
	}
	labels := ds.Spec.Template.Labels
	for _, drv := range podServedDrivers {
		key, err := mountpod.FlexLabelKey(drv)
		if err != nil {
			t.Fatal(err)
		}
		if labels[key] != mountpod.LabelValue {
			t.Errorf("DaemonSet pods carry %s=%q, want %q (they serve %s)", key, labels[key], mountpod.LabelValue, drv)
		}
	}

	// Every flex driver the pods claim to serve is in the image, where the
	// kubelet and the controller-manager look for it.
	args, err := os.ReadFile(imageArgs)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for key := range labels {
		drv, flex, err := mountpod.ParseLabelKey(key)
		if err != nil || !flex {
			continue
		}
		served = append(served, drv)
		vendor, name, ok := strings.Cut(drv, "/")
		if !ok {
			vendor, name = "", drv
		}
		path := mountpod.FlexDriverDir + "/" + vendor + "~" + name + "/" + name
		if vendor == "" {
			path = mountpod.FlexDriverDir + "/" + name + "/" + name
		}
		if !bytes.Contains(args, []byte("\n"+path+"=")) {
			t.Errorf("the pods serve %s, but %s puts nothing at %s", drv, imageArgs, path)
		}
	}
	slices.Sort(served)
	wantServed := slices.Clone(podServedDrivers)
	slices.Sort(wantServed)
	if !slices.Equal(served, wantServed) {
		t.Errorf("the pods serve flex drivers %v, want %v", served, wantServed)
	}
}

// TestAdmissionPolicyMatches: the policy sees every request that could put
// a mount label on a pod in kube-mount (directly, or through a DaemonSet's
// template) or change what a labelled pod runs, fails closed, and looks for the
// label keys and value pkg/mountpod uses. Its decisions are tested in
// TestAdmissionPolicyDecisions.
func TestAdmissionPolicyMatches(t *testing.T) {
	policy, binding := shippedPolicy(t)
	if binding.Spec.PolicyName != policy.Name || !slices.Equal(binding.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("binding %s: policy %q with actions %v, want %q with [Deny]", binding.Name, binding.Spec.PolicyName, binding.Spec.ValidationActions, policy.Name)
	}
	if binding.Spec.ParamRef != nil || binding.Spec.MatchResources != nil {
		t.Errorf("binding %s narrows or parameterises the policy; the policy alone says what it matches", binding.Name)
	}
	if fp := policy.Spec.FailurePolicy; fp == nil || *fp != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %v, want Fail", fp)
	}
	mc := policy.Spec.MatchConstraints
	if mc == nil || mc.NamespaceSelector == nil ||
		!maps.Equal(mc.NamespaceSelector.MatchLabels, map[string]string{v1.LabelMetadataName: namespace}) ||
		len(mc.NamespaceSelector.MatchExpressions) > 0 || mc.ObjectSelector != nil && !reflect.DeepEqual(*mc.ObjectSelector, metav1.LabelSelector{}) {
		t.Fatalf("matchConstraints %+v: want namespace %s by %s and no object selector", mc, namespace, v1.LabelMetadataName)
	}
	var got []string
	for _, r := range mc.ResourceRules {
		if len(r.ResourceNames) > 0 {
			t.Errorf("rule %+v names resources", r)
		}
		for _, g := range r.APIGroups {
			for _, ver := range r.APIVersions {
				for _, op := range r.Operations {
					for _, res := range r.Resources {
						got = append(got, g+"/"+ver+" "+string(op)+" "+res)
					}
				}
			}
		}
	}
	slices.Sort(got)
	// pods/status: a status update keeps the labels the request sends.
	// pods/ephemeralcontainers: an ephemeral container runs any image.
	// daemonsets: the DaemonSet controller, which is allowed, creates pods
	// from their templates.
	want := []string{"/v1 CREATE pods", "/v1 UPDATE pods", "/v1 UPDATE pods/ephemeralcontainers", "/v1 UPDATE pods/status",
		"apps/v1 CREATE daemonsets", "apps/v1 UPDATE daemonsets"}
	if !slices.Equal(got, want) {
		t.Errorf("the policy matches %v, want %v", got, want)
	}

	vars := map[string]string{}
	for _, v := range policy.Spec.Variables {
		vars[v.Name] = v.Expression
	}
	for _, prefix := range []string{mountpod.InTreeLabelPrefix + "/", mountpod.FlexLabelPrefix + "/"} {
		if !strings.Contains(vars["mountLabels"], "k.startsWith('"+prefix+"')") {
			t.Errorf("variable mountLabels does not look for keys with prefix %s:\n%s", prefix, vars["mountLabels"])
		}
	}
	if !strings.Contains(vars["mountLabels"], "== '"+mountpod.LabelValue+"'") {
		t.Errorf("variable mountLabels does not look for the value %q:\n%s", mountpod.LabelValue, vars["mountLabels"])
	}
	if !strings.Contains(vars["allowedUsers"], "'system:serviceaccount:kube-system:daemon-set-controller'") {
		t.Errorf("variable allowedUsers does not list the DaemonSet controller:\n%s", vars["allowedUsers"])
	}
}
