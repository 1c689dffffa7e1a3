package cleanupjobs

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// syncHeldPV handles a held PV (the returned disk of a PV dropped without a
// wipe) and reports whether it did. Without an admin's action nothing
// happens: no Job, no deletion, even if the PV is deleted. With
// jobs.AdminActionWipe the PV is left to the usual cleanup, whose Job
// checks the disk's identity and wipes it. With jobs.AdminActionKeep the
// disk is forgotten as unwiped and the PV let go of its held claim, so it
// becomes Available with its data.
func (r *runner) syncHeldPV(ctx context.Context, pv *v1.PersistentVolume) (bool, error) {
	if !pvstate.Held(pv) {
		return false, nil
	}
	switch pvstate.AdminAction(pv) {
	case jobs.AdminActionWipe:
		return false, nil
	case jobs.AdminActionKeep:
		if key := pv.Annotations[jobs.AnnUnwipedDisk]; key != "" {
			if err := r.Unwiped.Forget(ctx, key); err != nil {
				return true, err
			}
		}
		if _, kept, err := r.Marks.Apply(ctx, pv, pvstate.KeepHeld); err != nil || !kept {
			return true, err
		}
		r.Recorder.Eventf(pv, v1.EventTypeNormal, "HeldDiskKept", "An admin kept the held disk at %s: the PV is published "+
			"again with its data", pv.Annotations[jobs.AnnHostPath])
	}
	return true, nil
}
