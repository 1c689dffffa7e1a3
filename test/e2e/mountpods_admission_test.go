//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

const (
	muPolicy     = "nodeplug-mount-pod-creators"
	muPolicyUser = "e2e:mount-pod-user"
	// muUnusedLabel is a mount label of a plugin no volume uses.
	muUnusedLabel = "mount.kubernetes.io/e2e-admission"
)

// TestMountPodAdmission: with deploy/mount-utilities/admission-policy.yaml
// applied, a user whose Role lets it create and patch pods in kube-mount
// cannot put a mount label on a pod there, nor change the image of the
// DaemonSet's pod, but can create an unlabelled pod; the DaemonSet still
// gets its pod, and a system:masters admin may still create a labelled one.
func TestMountPodAdmission(t *testing.T) {
	c := framework.Connect(t)
	c.RequireFlag(t, "kubelet", "--experimental-mount-namespace=kube-mount")
	ctx := t.Context()
	t.Cleanup(func() { muRemove(t, c) })
	var ns corev1.Namespace
	muManifest(t, "namespace.yaml", "", &ns)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace: %v", err)
	}
	user := muPolicyUserClient(ctx, t, c)
	muApplyAdmissionPolicy(ctx, t, c)
	muWaitPolicyInForce(ctx, t, user)

	t.Run("an ordinary user cannot create a labelled pod", func(t *testing.T) {
		for _, key := range []string{"mount.kubernetes.io/local-volume", "flexvolume.mount.kubernetes.io/nodeplug.io_2ffuse"} {
			pod := muKubeMountPod("mu-adm-labelled", map[string]string{key: "true"})
			_, err := user.CoreV1().Pods(muNamespace).Create(ctx, pod, metav1.CreateOptions{})
			if err == nil {
				c.DeletePodIn(t, muNamespace, pod.Name)
				t.Fatalf("user %s created a pod labelled %s in %s", muPolicyUser, key, muNamespace)
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), muPolicy) || !strings.Contains(err.Error(), key) {
				t.Errorf("label %s: got %v, want Forbidden by %s naming the label", key, err, muPolicy)
			}
		}
	})

	t.Run("an ordinary user can create an unlabelled pod but not label it", func(t *testing.T) {
		pod := muKubeMountPod("mu-adm-plain", map[string]string{"app": "mu-adm"})
		if _, err := user.CoreV1().Pods(muNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("user %s cannot create an unlabelled pod: %v", muPolicyUser, err)
		}
		t.Cleanup(func() { c.DeletePodIn(t, muNamespace, pod.Name) })
		patch := `{"metadata":{"labels":{"` + muUnusedLabel + `":"true"}}}`
		_, err := user.CoreV1().Pods(muNamespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), muPolicy) {
			t.Errorf("adding %s to %s: got %v, want Forbidden by %s", muUnusedLabel, pod.Name, err, muPolicy)
		}
	})

	t.Run("the shipped DaemonSet still gets its pod, and a user cannot change its image", func(t *testing.T) {
		name := muDeploy(ctx, t, c)
		patch := `{"spec":{"containers":[{"name":"utilities","image":"` + framework.BusyboxImage + `"}]}}`
		_, err := user.CoreV1().Pods(muNamespace).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), muPolicy) {
			t.Errorf("changing the image of %s: got %v, want Forbidden by %s", name, err, muPolicy)
		}
	})

	t.Run("an ordinary user cannot create a DaemonSet whose pods carry a mount label", func(t *testing.T) {
		labelled := muLabelledDaemonSet("mu-adm-ds", map[string]string{muUnusedLabel: "true"})
		_, err := user.AppsV1().DaemonSets(muNamespace).Create(ctx, labelled, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), muPolicy) {
			t.Errorf("a DaemonSet whose template carries %s: got %v, want Forbidden by %s", muUnusedLabel, err, muPolicy)
		}
		plain := muLabelledDaemonSet("mu-adm-ds", map[string]string{"app": "mu-adm-ds"})
		if _, err := user.AppsV1().DaemonSets(muNamespace).Create(ctx, plain, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("an unlabelled DaemonSet is refused: %v", err)
		}
	})

	t.Run("an ordinary user cannot add an ephemeral container to a mount pod", func(t *testing.T) {
		name := muDeploy(ctx, t, c)
		pod, err := c.Client.CoreV1().Pods(muNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: framework.BusyboxImage,
				ImagePullPolicy: framework.ImagePullPolicy(), Command: []string{"sleep", "60"}}})
		_, err = user.CoreV1().Pods(muNamespace).UpdateEphemeralContainers(ctx, name, pod, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), muPolicy) {
			t.Errorf("adding an ephemeral container to %s: got %v, want Forbidden by %s", name, err, muPolicy)
		}
	})

	t.Run("a system:masters admin can create a labelled pod", func(t *testing.T) {
		pod := muKubeMountPod("mu-adm-admin", map[string]string{muUnusedLabel: "true"})
		if _, err := c.Client.CoreV1().Pods(muNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the admin cannot create a labelled pod: %v", err)
		}
		c.DeletePodIn(t, muNamespace, pod.Name)
	})
}

// muApplyAdmissionPolicy applies deploy/mount-utilities/admission-policy.yaml
// (the policy and its binding); the apiserver enforces it a moment later.
func muApplyAdmissionPolicy(ctx context.Context, t testing.TB, c *framework.Cluster) {
	t.Helper()
	path := filepath.Join("..", "..", "deploy", "mount-utilities", "admission-policy.yaml")
	if out, err := c.Kubectl(ctx, "apply", "-f", path); err != nil {
		t.Fatalf("apply %s: %v\n%s", path, err, out)
	}
}

// muWaitPolicyInForce waits until user's server-side dry-run create of a
// labelled pod is denied by the policy.
func muWaitPolicyInForce(ctx context.Context, t testing.TB, user kubernetes.Interface) {
	t.Helper()
	pod := muKubeMountPod("mu-adm-probe", map[string]string{muUnusedLabel: "true"})
	var last error
	err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) bool {
		_, last = user.CoreV1().Pods(muNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), muPolicy)
	})
	if err != nil {
		t.Fatalf("policy %s not in force after 60 s; the last dry-run create of a labelled pod returned %v", muPolicy, last)
	}
}

// muPolicyUserClient grants user muPolicyUser every right on pods in
// kube-mount through a Role (removed when t ends) and returns a client that
// impersonates it.
func muPolicyUserClient(ctx context.Context, t testing.TB, c *framework.Cluster) kubernetes.Interface {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-mount-pod-user", Namespace: muNamespace},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/status", "pods/ephemeralcontainers"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: muNamespace},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: muPolicyUser}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}
	rbac := c.Client.RbacV1()
	if _, err := rbac.Roles(muNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() { _ = rbac.Roles(muNamespace).Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	if _, err := rbac.RoleBindings(muNamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create rolebinding: %v", err)
	}
	t.Cleanup(func() {
		_ = rbac.RoleBindings(muNamespace).Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: muPolicyUser, Groups: []string{"system:authenticated"}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// muLabelledDaemonSet returns a busybox DaemonSet in kube-mount whose pods carry
// labels.
func muLabelledDaemonSet(name string, labels map[string]string) *appsv1.DaemonSet {
	pod := muKubeMountPod(name, labels)
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: muNamespace},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec}}}
}

// muKubeMountPod returns a busybox pod in kube-mount on no particular node.
func muKubeMountPod(name string, labels map[string]string) *corev1.Pod {
	pod := framework.BusyboxPod(name, "sleep 3600")
	pod.Namespace = muNamespace
	pod.Labels = labels
	zero := int64(0)
	pod.Spec.TerminationGracePeriodSeconds = &zero
	return pod
}
