package publishing

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// dropReplacedPV deletes a released PV of a replaced machine, unless a
// cleanup started before the replacement still runs.
func (p *publisher) dropReplacedPV(ctx context.Context, pv *v1.PersistentVolume) error {
	if locked, err := p.State.CleanupLocked(pv.Labels[jobs.LabelVolumeID]); err != nil || locked {
		return err
	}
	if err := p.Unwiped.Remember(ctx, pv, "machine replaced, another disk at the path"); err != nil {
		return err
	}
	if err := p.Ops.RemoveFinalizer(ctx, pv); err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return nil
	}
	p.Recorder.Eventf(pv, v1.EventTypeWarning, "MachineReplaced", "The PV's machine no longer runs under node %s and its path leads to another "+
		"disk; deleting the released PV without a wipe", pv.Annotations[jobs.AnnNode])
	return p.Ops.Delete(ctx, pv, false, "machine_replaced")
}
