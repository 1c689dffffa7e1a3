//go:build e2e

package framework

import (
	"context"
	"strings"
	"testing"
)

// RequireFile fails t unless the file at path in pod (default namespace)
// holds want, spaces around it aside. It reads it with kubectl exec.
func (c *Cluster) RequireFile(ctx context.Context, t testing.TB, pod, path, want string) {
	t.Helper()
	out, err := c.Kubectl(ctx, "exec", pod, "--", "cat", path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != want {
		t.Fatalf("pod %s: %s holds %q, want %q", pod, path, strings.TrimSpace(out), want)
	}
}

// RequireMountType fails t unless path in pod (default namespace) is a
// mount of type fsType, as the pod's /proc/mounts says.
func (c *Cluster) RequireMountType(ctx context.Context, t testing.TB, pod, path, fsType string) {
	t.Helper()
	out, err := c.Kubectl(ctx, "exec", pod, "--", "grep", " "+path+" ", "/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(out); len(f) < 3 || f[2] != fsType {
		t.Fatalf("pod %s: %s is %q, want a %s mount", pod, path, strings.TrimSpace(out), fsType)
	}
}
