package controller

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

// Values of Options.ReplacedMachinePolicy: what happens to a bound PV whose
// machine no longer runs under its node's name.
const (
	// ReplacedMachineBlockPods keeps the PV, marks it and refuses new pods
	// that use its claim (the master writes the claim into the admission
	// policy's blockedClaims variable).
	ReplacedMachineBlockPods = "BlockPods"
	// ReplacedMachineWarn keeps the PV and marks it, but blocks no pod.
	ReplacedMachineWarn = "Warn"
)

// ReplacedMachineAdmissionPolicy is the default name of the
// ValidatingAdmissionPolicy that refuses new pods using a claim bound to a
// PV of a replaced machine (Options.AdmissionPolicyName).
const ReplacedMachineAdmissionPolicy = blockedclaims.DefaultPolicyName

// ReplacedMachinePolicies lists the valid policies.
var ReplacedMachinePolicies = []string{ReplacedMachineBlockPods, ReplacedMachineWarn}

// dropReplacedPV deletes a released PV of a replaced machine, unless a
// cleanup started before the replacement still runs.
func (c *controller) dropReplacedPV(ctx context.Context, pv *v1.PersistentVolume) error {
	if locked, err := c.cleanupLocked(pv.Labels[jobs.LabelVolumeID]); err != nil || locked {
		return err
	}
	if err := c.unwiped.Remember(ctx, pv, "machine replaced, another disk at the path"); err != nil {
		return err
	}
	if err := c.ops.RemoveFinalizer(ctx, pv); err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return nil
	}
	c.event(pv, v1.EventTypeWarning, "MachineReplaced", "The PV's machine no longer runs under node %s and its path leads to another "+
		"disk; deleting the released PV without a wipe", pv.Annotations[jobs.AnnNode])
	return c.ops.Delete(ctx, pv, false, "machine_replaced")
}
