package watcher

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
)

// Notifier tells the master about a changed view.
type Notifier interface {
	// Notify writes the view. It is idempotent.
	Notify(ctx context.Context, v View, reason v1alpha1.NotificationReason) error
}

type nodeDiskStateNotifier struct {
	client   dynamic.ResourceInterface
	nodeName string
	clock    clock.PassiveClock
}

var _ Notifier = &nodeDiskStateNotifier{}

// NewNotifier returns a Notifier that creates or updates the node's
// NodeDiskState through a dynamic client.
func NewNotifier(dyn dynamic.Interface, nodeName string, clk clock.PassiveClock) Notifier {
	return &nodeDiskStateNotifier{client: dyn.Resource(v1alpha1.SchemeGroupVersionResource), nodeName: nodeName, clock: clk}
}

func (n *nodeDiskStateNotifier) Notify(ctx context.Context, v View, reason v1alpha1.NotificationReason) error {
	spec := v1alpha1.NodeDiskStateSpec{NodeName: n.nodeName, Digest: v.Digest, Entries: int32(v.Entries), Reason: reason,
		ObservedTime: metav1.NewTime(n.clock.Now())}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := n.client.Get(ctx, n.nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			obj, err := v1alpha1.ToUnstructured(&v1alpha1.NodeDiskState{ObjectMeta: metav1.ObjectMeta{Name: n.nodeName}, Spec: spec})
			if err != nil {
				return err
			}
			_, err = n.client.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("failed to create %s %s: %w", v1alpha1.Kind, n.nodeName, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to get %s %s: %w", v1alpha1.Kind, n.nodeName, err)
		}
		s, err := v1alpha1.FromUnstructured(u)
		if err != nil {
			return err
		}
		s.Spec = spec
		obj, err := v1alpha1.ToUnstructured(s)
		if err != nil {
			return err
		}
		if _, err := n.client.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to update %s %s: %w", v1alpha1.Kind, n.nodeName, err)
		}
		return nil
	})
}
