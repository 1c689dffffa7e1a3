//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager"
)

// The kubelet mounts an attachable volume only once its node status has
// listed the volume in volumesInUse (so that the attach/detach controller
// cannot detach it meanwhile), and it updates that status every
// nodeStatusUpdateFrequency (10 s). A pod whose flex volume was just
// attached therefore waited up to 10 s more. inUseReporter reports the
// volumes the volume manager wants in use within an interval, with the same
// rule as the kubelet's own status update: publish the list on the Node
// first, then mark those volumes reported. It adds to the list only; the
// kubelet's status update still removes volumes no longer in use.

// volumeManagerField is the unexported field of upstream's Kubelet that
// holds its volume manager (hack/upstream-internals.txt).
const volumeManagerField = "volumeManager"

// errNoVolumeManager: the field exists but is not set yet.
var errNoVolumeManager = errors.New("the kubelet has no volume manager yet")

// kubeletVolumeManager returns k's volume manager, read by reflection:
// upstream exports no accessor. An error names the field if upstream
// renamed or retyped it; TestKubeletVolumeManagerField fails then too.
func kubeletVolumeManager(k *kubelet.Kubelet) (volumemanager.VolumeManager, error) {
	f := reflect.ValueOf(k).Elem().FieldByName(volumeManagerField)
	want := reflect.TypeFor[volumemanager.VolumeManager]()
	if !f.IsValid() || f.Type() != want {
		return nil, fmt.Errorf("k8s.io/kubernetes/pkg/kubelet.Kubelet has no field %s of type %v", volumeManagerField, want)
	}
	vm, _ := reflect.TypeAssert[volumemanager.VolumeManager](reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem())
	if vm == nil {
		return nil, errNoVolumeManager
	}
	return vm, nil
}

// inUseReporter publishes the volumes in use on the node's status.
type inUseReporter struct {
	vm     volumemanager.VolumeManager
	client kubernetes.Interface
	node   string
	// marked are the volumes in use that were on the node's status when
	// this reporter last read it: no API call while nothing else is wanted.
	marked sets.Set[v1.UniqueVolumeName]
}

// run reports every interval until ctx ends. A round costs no API call
// unless a volume is wanted in use that was not when it last looked.
func (r *inUseReporter) run(ctx context.Context, interval time.Duration) {
	logger := klog.FromContext(ctx)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := r.report(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Reporting volumes in use failed; the kubelet's node status update will", "node", r.node)
		} else if n > 0 {
			logger.V(2).Info("Reported volumes in use ahead of the node status update", "node", r.node, "volumes", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// report adds the volumes in use that the node's status lacks, then marks
// the status's list reported. It returns how many it added.
func (r *inUseReporter) report(ctx context.Context) (int, error) {
	if !r.vm.ReconcilerStatesHasBeenSynced() {
		return 0, nil // the kubelet's own setter waits for this too
	}
	want := r.vm.GetVolumesInUse()
	// A volume no longer in use is forgotten: when it is wanted again, the
	// kubelet may have taken it off the node's status meanwhile.
	r.marked = r.marked.Intersection(sets.New(want...))
	if r.marked.HasAll(want...) {
		return 0, nil
	}
	node, err := r.client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("get node %s: %w", r.node, err)
	}
	have := sets.New(node.Status.VolumesInUse...)
	missing := sets.New(want...).Difference(have)
	if missing.Len() == 0 {
		r.vm.MarkVolumesAsReportedInUse(node.Status.VolumesInUse)
		r.marked = sets.New(want...)
		return 0, nil
	}
	list := sets.List(have.Union(missing))
	slices.Sort(list)
	patched, err := r.patch(ctx, node.ResourceVersion, list)
	if apierrors.IsConflict(err) {
		return 0, nil // the node changed since the get: the next tick retries
	}
	if err != nil {
		return 0, err
	}
	r.vm.MarkVolumesAsReportedInUse(patched.Status.VolumesInUse)
	r.marked = sets.New(want...)
	return missing.Len(), nil
}

// patch sets status.volumesInUse, if the node is still at resourceVersion.
func (r *inUseReporter) patch(ctx context.Context, resourceVersion string, list []v1.UniqueVolumeName) (*v1.Node, error) {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]string{"resourceVersion": resourceVersion},
		"status":   map[string]any{"volumesInUse": list},
	})
	if err != nil {
		return nil, fmt.Errorf("encode the volumesInUse patch: %w", err)
	}
	node, err := r.client.CoreV1().Nodes().Patch(ctx, r.node, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patch node %s volumesInUse: %w", r.node, err)
	}
	return node, nil
}
