package cleanupjobs

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// NodeGone reports whether the release of claims on deleted nodes (package
// nodecleanup) marked a PV: its Node was deleted and did not come back
// within the class's delay, and its claim is being deleted.
func NodeGone(pv *v1.PersistentVolume) bool {
	_, ok := pv.Annotations[jobs.AnnNodeGone]
	return ok
}

// syncNodeGonePV handles a released PV that carries the node-gone mark, and
// reports whether it did. Its disk left with its machine, so it is deleted
// without a wipe and never gets a cleanup Job: a Job pinned to the node name
// would wait for ever, or wipe the disk of the next machine to take the
// name. If the Node is back on the same machine (or says nothing of its
// machine), the mark is removed and the PV is wiped like any other. A
// cleanup Job of this very PV, which the mark should have prevented, is
// left to finish.
func (r *runner) syncNodeGonePV(ctx context.Context, pv *v1.PersistentVolume, latest *batchv1.Job) (bool, error) {
	if !pvops.Cleanable(pv) || !NodeGone(pv) || (latest != nil && latest.Annotations[jobs.AnnPVUID] == string(pv.UID)) {
		return false, nil
	}
	if node, err := r.Nodes.Get(pv.Annotations[jobs.AnnNode]); err == nil && !machine.Recorded(pv).Differs(machine.Of(node)) {
		if _, _, err := r.Marks.Apply(ctx, pv, pvstate.ClearNodeGone); err != nil {
			return true, err
		}
		r.Recorder.Eventf(pv, v1.EventTypeNormal, "NodeBack", "Node %s is back on the same machine; the released PV is wiped as usual", node.Name)
		return true, nil
	}
	// Remembered before anything is deleted: if the PV went first, a
	// failure or a change of leader in between would forget its disk.
	if err := r.Unwiped.Remember(ctx, pv, "node "+pv.Annotations[jobs.AnnNode]+" deleted"); err != nil {
		return true, err
	}
	if err := r.Ops.RemoveFinalizer(ctx, pv); err != nil {
		return true, err
	}
	if pv.DeletionTimestamp != nil {
		return true, nil
	}
	r.Recorder.Eventf(pv, v1.EventTypeWarning, "NodeDeleted", "Node %s was deleted at %s and did not come back; deleting the released PV without a wipe",
		pv.Annotations[jobs.AnnNode], pv.Annotations[jobs.AnnNodeGone])
	return true, r.Ops.Delete(ctx, pv, false, metrics.ReasonNodeDeleted)
}
