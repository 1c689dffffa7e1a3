//go:build e2e

package e2e

import (
	"context"
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
	d := newLPVDisksAt(t, n, "/mnt/e2e-shipped", "/mnt/fast-disks", "/mnt/block-disks")
	// Runs before d's own teardown: the shipped class directory is not
	// below d's base.
	t.Cleanup(func() {
		n.UnmountAll(t, d.fast)
		_ = n.RemoveAll(context.Background(), filepath.Join(d.fast, "e2e-shipped"))
	})
	vol := d.addDir("e2e-shipped")

	file := filepath.Join(t.TempDir(), "shipped.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(lpvManifestDocs(t), "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Rolls out only if every node's watcher pod starts: no
	// CreateContainerError for a HostToContainer path on a private mount.
	applyLPV(ctx, t, c, file)
	waitForPVOn(ctx, t, c, n.Name, vol, "", corev1.VolumeAvailable)
}
