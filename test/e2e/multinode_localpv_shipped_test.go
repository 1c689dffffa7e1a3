//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/test/e2e/framework"
)

// TestLocalPVShippedManifestsOnNodes applies deploy/local-volume-provisioner
// byte for byte, as a new user would, on a cluster of namespaced nodes:
// its watcher mounts /mnt/fast-disks and /mnt/block-disks HostToContainer,
// which a container runtime refuses below a private mount, so this passes
// only when a node's mounts are shared as systemd makes them. A directory
// mounted at /mnt/fast-disks/<name> on the second node becomes a PV of
// that node.
func TestLocalPVShippedManifestsOnNodes(t *testing.T) {
	c := framework.Connect(t)
	c.RequireNodes(t, 2)
	ctx := t.Context()
	n := c.Nodes[1]
	d := &lpvDisks{t: t, n: n, base: "/mnt/e2e-shipped", fast: "/mnt/fast-disks", block: "/mnt/block-disks"}
	for _, dir := range []string{d.fast, d.block, filepath.Join(d.base, "src"), filepath.Join(d.base, "img")} {
		if err := os.MkdirAll(n.HostPath(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		n.UnmountAll(t, d.fast)
		_ = os.RemoveAll(n.HostPath(filepath.Join(d.fast, "e2e-shipped")))
		d.teardown()
	})
	vol := d.addDir("e2e-shipped")

	var docs []string
	for _, f := range []string{"namespace", "crd", "rbac-master", "rbac-watcher", "admission-policy", "config", "master", "watcher"} {
		raw, err := os.ReadFile(filepath.Join("../../deploy/local-volume-provisioner", f+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	file := filepath.Join(t.TempDir(), "shipped.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Rolls out only if every node's watcher pod starts: no
	// CreateContainerError for a HostToContainer path on a private mount.
	applyLPV(ctx, t, c, file)
	waitForPVOn(ctx, t, c, n.Name, vol, "", corev1.VolumeAvailable)
}
