package localpv

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
)

// TestReplacedMachineWarnNeedsNoPolicyRights runs the master as its
// ServiceAccount with the shipped RBAC minus every right on admission
// policies, as an admin who chose --replaced-machine-policy=Warn to avoid
// granting them would. Under BlockPods the master cannot sync its policy
// cache: it says so in Ready and does no work. Under Warn it syncs and
// publishes.
func TestReplacedMachineWarnNeedsNoPolicyRights(t *testing.T) {
	e, sim := newMasterEnv(t)
	e.dropAdmissionPolicyRights(t)
	policies := kubernetes.NewForConfigOrDie(asMaster(e.cp.Config)).AdmissionregistrationV1().ValidatingAdmissionPolicies()
	poll(t, "the master's rights on admission policies gone", func(ctx context.Context) (bool, error) {
		_, err := policies.List(ctx, metav1.ListOptions{})
		return apierrors.IsForbidden(err), nil
	})
	sim.setDisks("node-a", disks("node-a", "vol1"))
	e.createNode(t, "node-a")

	stop, c := e.startMasterWith(t, time.Second, controller.Options{CacheSyncTimeout: time.Second})
	const want = "the master needs list/watch validatingadmissionpolicies.admissionregistration.k8s.io named " +
		controller.ReplacedMachineAdmissionPolicy
	var notReady error
	poll(t, "BlockPods master reports the policy cache", func(context.Context) (bool, error) {
		notReady = c.Ready()
		return notReady != nil && strings.Contains(notReady.Error(), want), nil
	})
	if !strings.Contains(notReady.Error(), "forbidden") {
		t.Errorf("Ready error %q does not say the list was forbidden", notReady)
	}
	if e.pvExists(t, pvName("node-a", "vol1")) {
		t.Error("the master published before its caches synced")
	}
	stop()

	_, c = e.startMasterWith(t, time.Second, controller.Options{ReplacedMachinePolicy: controller.ReplacedMachineWarn,
		CacheSyncTimeout: time.Second})
	e.waitForPV(t, pvName("node-a", "vol1"), "")
	if err := c.Ready(); err != nil {
		t.Errorf("Warn master not ready: %v", err)
	}
}

// dropAdmissionPolicyRights removes the rules on admission policies from
// the master's ClusterRole.
func (e *env) dropAdmissionPolicyRights(t *testing.T) {
	t.Helper()
	roles := e.cp.Client.RbacV1().ClusterRoles()
	role, err := roles.Get(t.Context(), "local-volume-provisioner-master", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(role.Rules)
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, "admissionregistration.k8s.io")
	})
	if len(role.Rules) == n {
		t.Fatal("the master's ClusterRole has no rule on admission policies")
	}
	if _, err := roles.Update(t.Context(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grantMasterRights adds to the master's shipped ClusterRole what
// rbac-master.yaml tells an admin to add: patch on the classes of the
// test's configuration and, when a class releases claims of deleted nodes,
// the rights on claims and pods that takes.
func (e *env) grantMasterRights(t testing.TB, classes []string, releaseClaims bool) {
	t.Helper()
	roles := e.cp.Client.RbacV1().ClusterRoles()
	role, err := roles.Get(t.Context(), "local-volume-provisioner-master", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"},
		ResourceNames: classes, Verbs: []string{"patch"}})
	if releaseClaims {
		role.Rules = append(role.Rules,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"delete"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims/status"}, Verbs: []string{"patch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}})
	}
	if _, err := roles.Update(t.Context(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
