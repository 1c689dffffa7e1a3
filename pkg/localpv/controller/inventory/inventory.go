package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// Recorder writes nodes' disk inventories. It is safe for concurrent use.
type Recorder interface {
	// Record sets the node's inventory gauge and writes the report's disk
	// inventory into the status of the node's NodeDiskState when it
	// differs from the last one written. A node without a NodeDiskState
	// (no watcher yet) gets none. Errors are logged, not returned: the
	// inventory is informational.
	Record(ctx context.Context, node string, r *report.Report)
	// Forget drops what is remembered of a node, and its gauge: the next
	// Record writes the inventory again.
	Forget(node string)
	// Delete deletes the NodeDiskState of a deleted node. One that is
	// already gone is no error.
	Delete(ctx context.Context, node string) error
}

type recorder struct {
	client dynamic.ResourceInterface
	clock  clock.PassiveClock

	mu sync.Mutex
	// written is the digest of the inventory last written per node.
	written map[string]string
}

var _ Recorder = &recorder{}

// New returns a Recorder that writes through client, the NodeDiskState
// resource; a nil client writes nothing and only sets the gauge.
func New(client dynamic.ResourceInterface, clk clock.PassiveClock) Recorder {
	return &recorder{client: client, clock: clk, written: map[string]string{}}
}

func (r *recorder) Record(ctx context.Context, node string, rep *report.Report) {
	logger := klog.FromContext(ctx)
	metrics.InventoryDisks.WithLabelValues(node).Set(float64(rep.DisksTotal))
	if r.client == nil {
		return
	}
	status := v1alpha1.NodeDiskStateStatus{DisksTotal: int32(min(rep.DisksTotal, 1<<30))}
	for _, d := range rep.Disks {
		status.Disks = append(status.Disks, apiDisk(d))
	}
	doc, err := json.Marshal(status)
	if err != nil {
		logger.Error(err, "Failed to encode the disk inventory", "node", node)
		return
	}
	sum := sha256.Sum256(doc)
	digest := hex.EncodeToString(sum[:])
	r.mu.Lock()
	same := r.written[node] == digest
	r.mu.Unlock()
	if same {
		return
	}
	patch, err := statusPatch(status, r.clock.Now())
	if err == nil {
		_, err = r.client.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	switch {
	case apierrors.IsNotFound(err):
		logger.V(2).Info("Node has no NodeDiskState, its disk inventory is not recorded", "node", node)
	case err != nil:
		logger.Error(fmt.Errorf("failed to record the disk inventory of node %s: %w", node, err), "Disk inventory not recorded")
	default:
		r.mu.Lock()
		r.written[node] = digest
		r.mu.Unlock()
		logger.V(2).Info("Recorded the disk inventory", "node", node, "disks", rep.DisksTotal)
	}
}

func (r *recorder) Forget(node string) {
	r.mu.Lock()
	delete(r.written, node)
	r.mu.Unlock()
	metrics.InventoryDisks.DeleteLabelValues(node)
}

func (r *recorder) Delete(ctx context.Context, node string) error {
	if r.client == nil {
		return nil
	}
	err := r.client.Delete(ctx, node, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to delete the NodeDiskState of deleted node %s: %w", node, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted the NodeDiskState of a deleted node", "node", node)
	return nil
}

// statusPatch is the merge patch that sets the inventory. Every field is
// written, an empty list as null and no disks as 0, so that a list the
// report no longer carries (no disks left, or dropped for size) is cleared
// rather than kept beside a fresh inventoryTime.
func statusPatch(status v1alpha1.NodeDiskStateStatus, now time.Time) ([]byte, error) {
	var disks any
	if len(status.Disks) > 0 {
		disks = status.Disks
	}
	return json.Marshal(map[string]any{"status": map[string]any{
		"disks":         disks,
		"disksTotal":    status.DisksTotal,
		"inventoryTime": metav1.NewTime(now),
	}})
}

func apiDisk(d report.Disk) v1alpha1.Disk {
	return v1alpha1.Disk{Name: d.Name, SizeBytes: d.Size, Rotational: d.Rotational, Removable: d.Removable,
		ReadOnly: d.ReadOnly, Model: d.Model, Vendor: d.Vendor, Serial: d.Serial, WWN: d.WWN, IDs: d.IDs,
		Partitions: int32(min(d.Partitions, 1<<20)), Holders: int32(min(d.Holders, 1<<20)), Stacked: d.Stacked,
		Signature: d.Signature}
}
