//go:build e2e

package framework

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeAttached reports whether node reports attached a volume whose
// unique name (<plugin>/<volume>) match accepts. A failed get of the Node
// is returned as the error, with false.
func (c *Cluster) NodeAttached(ctx context.Context, node string, match func(volume string) bool) (bool, error) {
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("get node %s: %w", node, err)
	}
	for _, v := range n.Status.VolumesAttached {
		if match(string(v.Name)) {
			return true, nil
		}
	}
	return false, nil
}

// WaitForPVGone polls (Poll) up to timeout until the PersistentVolume
// name is not found.
func (c *Cluster) WaitForPVGone(ctx context.Context, name string, timeout time.Duration) error {
	return Poll(ctx, timeout, func(ctx context.Context) bool {
		_, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// CSINodeHasDriver reports whether node's CSINode lists driver (false when
// the CSINode cannot be read).
func (c *Cluster) CSINodeHasDriver(ctx context.Context, node, driver string) bool {
	n, err := c.Client.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, d := range n.Spec.Drivers {
		if d.Name == driver {
			return true
		}
	}
	return false
}
