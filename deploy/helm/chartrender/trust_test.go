package chartrender

import (
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestReplacedMachinePolicyPerInstallation (review P1): each release has
// its own replaced-machine policy and binding, its master writes into that
// one (flag and RBAC), and the policy looks only at pods that use a claim,
// outside the system namespaces and the release's own.
func TestReplacedMachinePolicyPerInstallation(t *testing.T) {
	tests := []struct {
		name, release, namespace, policy string
	}{
		{name: "default names", release: testRelease, namespace: testNS, policy: "local-volume-provisioner-replaced-machine-claims"},
		{name: "second installation", release: "fast", namespace: "storage-fast", policy: "fast-local-volume-provisioner-replaced-machine-claims"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.release, tc.namespace, nil)
			p := &admissionv1.ValidatingAdmissionPolicy{}
			r.get("ValidatingAdmissionPolicy", tc.policy, p)
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			r.get("ValidatingAdmissionPolicyBinding", tc.policy, b)
			if b.Spec.PolicyName != tc.policy {
				t.Errorf("binding names policy %s", b.Spec.PolicyName)
			}
			if len(p.Spec.MatchConditions) == 0 || !slices.ContainsFunc(p.Spec.MatchConditions, func(c admissionv1.MatchCondition) bool {
				return c.Name == "uses-claims"
			}) {
				t.Errorf("no uses-claims match condition: %v", p.Spec.MatchConditions)
			}
			sel := p.Spec.MatchConstraints.NamespaceSelector
			if sel == nil || len(sel.MatchExpressions) != 1 {
				t.Fatalf("namespace selector %v", sel)
			}
			for _, ns := range []string{"kube-system", "kube-public", "kube-node-lease", tc.namespace} {
				if e := sel.MatchExpressions[0]; e.Operator != "NotIn" || !slices.Contains(e.Values, ns) {
					t.Errorf("namespace %s is not left out: %v", ns, e)
				}
			}
			master := r.deployment(masterName(tc.release))
			if !hasArg(master.Spec.Template.Spec.Containers[0].Args, "--replaced-machine-admission-policy="+tc.policy) {
				t.Errorf("master args %v do not name the release's policy", master.Spec.Template.Spec.Containers[0].Args)
			}
			role := &rbacv1.ClusterRole{}
			r.get("ClusterRole", masterName(tc.release), role)
			if !slices.ContainsFunc(role.Rules, func(rule rbacv1.PolicyRule) bool {
				return slices.Contains(rule.Resources, "validatingadmissionpolicies") && slices.Equal(rule.ResourceNames, []string{tc.policy})
			}) {
				t.Errorf("the master's rights on admission policies are not limited to %s: %v", tc.policy, role.Rules)
			}
		})
	}
}

func masterName(release string) string {
	if release == testRelease {
		return "local-volume-provisioner-master"
	}
	return release + "-local-volume-provisioner-master"
}

// TestMasterRightsFollowClasses (review P4): the master may delete claims,
// patch their status and get pods only when a class releases claims of
// deleted nodes, and patch only its own classes.
func TestMasterRightsFollowClasses(t *testing.T) {
	tests := []struct {
		name        string
		classes     []any
		wantRelease bool
		wantPatch   []string
	}{
		{name: "no class releases claims", classes: []any{map[string]any{"name": "a", "hostDir": "/mnt/a"}},
			wantPatch: []string{"a"}},
		{name: "one class releases claims", classes: []any{map[string]any{"name": "a", "hostDir": "/mnt/a"},
			map[string]any{"name": "b", "hostDir": "/mnt/b", "releaseClaimsOfDeletedNodesAfter": "10m"}},
			wantRelease: true, wantPatch: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, testRelease, testNS, map[string]any{"classes": tc.classes})
			role := &rbacv1.ClusterRole{}
			r.get("ClusterRole", "local-volume-provisioner-master", role)
			allows := func(resource, verb string) []string {
				var names []string
				found := false
				for _, rule := range role.Rules {
					if slices.Contains(rule.Resources, resource) && slices.Contains(rule.Verbs, verb) {
						found = true
						names = append(names, rule.ResourceNames...)
					}
				}
				if !found {
					return nil
				}
				if names == nil {
					return []string{"*"}
				}
				return names
			}
			for _, rv := range [][2]string{{"persistentvolumeclaims", "delete"}, {"pods", "get"}} {
				if got := allows(rv[0], rv[1]) != nil; got != tc.wantRelease {
					t.Errorf("%s %s allowed: %t, want %t", rv[1], rv[0], got, tc.wantRelease)
				}
			}
			// Every class's replaced disk or machine marks its claim's health.
			if allows("persistentvolumeclaims/status", "patch") == nil {
				t.Error("patch persistentvolumeclaims/status not allowed: replaced disks and machines cannot mark their claims DataLoss")
			}
			// The memory of unwiped disks, shared by every installation:
			// remember (create), hold (list, and watch for the cache it
			// is read from), forget (update, delete).
			for _, verb := range []string{"get", "list", "watch", "create", "update", "delete"} {
				if got := allows("unwipeddisks", verb); !slices.Equal(got, []string{"*"}) {
					t.Errorf("%s unwipeddisks allowed on %v, want every entry", verb, got)
				}
			}
			if got := allows("storageclasses", "patch"); !slices.Equal(got, tc.wantPatch) {
				t.Errorf("storageclasses patch on %v, want %v", got, tc.wantPatch)
			}
			ns := &rbacv1.Role{}
			r.get("Role", "local-volume-provisioner-master", ns)
			for _, rule := range ns.Rules {
				// Only the legacy memory of unwiped disks, which the master
				// moves into UnwipedDisks and then deletes.
				if slices.Contains(rule.Resources, "configmaps") && (!slices.Equal(rule.ResourceNames, []string{"local-volume-provisioner-unwiped-disks"}) ||
					!slices.Equal(rule.Verbs, []string{"get", "delete"})) {
					t.Errorf("ConfigMap rights beyond reading and deleting the legacy memory of unwiped disks: %v", rule)
				}
			}
		})
	}
}
