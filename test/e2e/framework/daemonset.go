//go:build e2e

package framework

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreateDaemonSet creates ds in its namespace, deletes it when t ends
// (DeleteDaemonSet) and waits for its rollout (WaitForRollout).
func (c *Cluster) CreateDaemonSet(ctx context.Context, t testing.TB, ds *appsv1.DaemonSet) {
	t.Helper()
	if _, err := c.Client.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create daemonset %s: %v", ds.Name, err)
	}
	t.Cleanup(func() { c.DeleteDaemonSet(context.Background(), t, ds.Namespace, ds.Name) })
	c.WaitForRollout(ctx, t, ds.Namespace, ds.Name)
}

// DeleteDaemonSet deletes the DaemonSet and waits up to 90 s until its
// pods are gone (kubectl's foreground cascade); a DaemonSet that does not
// exist is no error.
func (c *Cluster) DeleteDaemonSet(ctx context.Context, t testing.TB, namespace, name string) {
	t.Helper()
	if _, err := c.Kubectl(ctx, "-n", namespace, "delete", "daemonset", name,
		"--ignore-not-found", "--wait", "--cascade=foreground", "--timeout=90s"); err != nil {
		t.Errorf("delete daemonset %s/%s: %v", namespace, name, err)
	}
}

// WaitForRollout waits up to 120 s for the DaemonSet's rollout (kubectl
// rollout status), and fails t with the namespace's pods otherwise.
func (c *Cluster) WaitForRollout(ctx context.Context, t testing.TB, namespace, name string) {
	t.Helper()
	if _, err := c.Kubectl(ctx, "-n", namespace, "rollout", "status", "daemonset/"+name, "--timeout=120s"); err != nil {
		out, _ := c.Kubectl(ctx, "-n", namespace, "get", "pods", "-o", "wide")
		t.Fatalf("%v\npods:\n%s", err, out)
	}
}
