package controller

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
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

// machine is the identity of the machine behind a node name, as the Node's
// status reports it: the kubelet reads it from the machine (DMI product UUID,
// /etc/machine-id), so a new machine under a reused name reports another.
type machine struct{ id, uuid string }

func machineOf(node *v1.Node) machine {
	return machine{id: node.Status.NodeInfo.MachineID, uuid: node.Status.NodeInfo.SystemUUID}
}

// recordedMachine returns the identity a PV was published or adopted for.
func recordedMachine(pv *v1.PersistentVolume) machine {
	return machine{id: pv.Annotations[jobs.AnnMachineID], uuid: pv.Annotations[jobs.AnnSystemUUID]}
}

func (m machine) known() bool { return m.id != "" || m.uuid != "" }

// differs reports whether two identities are of different machines: a field
// that both know differs. An unknown field proves nothing.
func (m machine) differs(o machine) bool {
	return (m.id != "" && o.id != "" && m.id != o.id) || (m.uuid != "" && o.uuid != "" && m.uuid != o.uuid)
}

func (m machine) String() string {
	return fmt.Sprintf("machineID %q, systemUUID %q", m.id, m.uuid)
}

func marked(pv *v1.PersistentVolume) bool {
	_, ok := pv.Annotations[jobs.AnnMachineReplaced]
	return ok
}

// checkMachine compares the machine a node name runs on with the machine of
// each of its PVs. PVs with no recorded machine (published before machines
// were recorded) are adopted by the current one; PVs of another machine are
// handled per the policy. A node that reports no identity is left as is.
func (c *controller) checkMachine(ctx context.Context, node *v1.Node) error {
	cur := machineOf(node)
	if !cur.known() {
		return nil
	}
	pvs, err := c.pvsOnNode(node.Name)
	if err != nil {
		return err
	}
	var errs []error
	var replaced []string
	for _, pv := range pvs {
		rec := recordedMachine(pv)
		switch {
		case pv.DeletionTimestamp != nil:
		case !rec.known():
			errs = append(errs, c.recordMachine(ctx, pv, cur))
		case rec.differs(cur):
			replaced = append(replaced, pv.Name)
			errs = append(errs, c.handleReplacedPV(ctx, node, pv, rec, cur))
		case marked(pv):
			errs = append(errs, c.unmarkReplaced(ctx, pv))
		}
	}
	if len(replaced) > 0 {
		c.noteReplacement(node, cur, replaced)
	}
	return aggregate(errs)
}

// noteReplacement counts and reports a node's new machine once per master.
func (c *controller) noteReplacement(node *v1.Node, cur machine, pvs []string) {
	first := false
	c.withNode(node.Name, func(st *nodeState) {
		first = st.replacedBy != cur
		st.replacedBy = cur
	})
	if !first {
		return
	}
	metrics.MachineReplacements.Inc()
	slices.Sort(pvs)
	c.event(node, v1.EventTypeWarning, "MachineReplaced",
		"Node now runs on another machine (%s) than the one its %d PVs were published for (%s): they are never published for this machine; unused ones are deleted, used ones are kept and marked %s",
		cur, len(pvs), pvops.Truncate(fmt.Sprint(pvs), 256), jobs.LabelMachineReplaced)
}

// recordMachine adopts a PV published before machines were recorded for
// the machine its node runs on now.
func (c *controller) recordMachine(ctx context.Context, pv *v1.PersistentVolume, cur machine) error {
	cp := pv.DeepCopy()
	if cur.id != "" {
		cp.Annotations[jobs.AnnMachineID] = cur.id
	}
	if cur.uuid != "" {
		cp.Annotations[jobs.AnnSystemUUID] = cur.uuid
	}
	if _, err := c.kube.CoreV1().PersistentVolumes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to record the machine of PV %s: %w", pv.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Recorded the machine of a PV", "pv", pv.Name, "machineID", cur.id, "systemUUID", cur.uuid)
	return nil
}

// handleReplacedPV deletes an unused PV of a replaced machine and marks a
// used one. A released PV is kept and marked too: no cleanup Job runs for it
// (one pinned to the node name would run on the new machine), and only a
// discovery report decides: the same disk at its path hands it to the new
// machine, which wipes it; a provably different disk drops it without a wipe.
func (c *controller) handleReplacedPV(ctx context.Context, node *v1.Node, pv *v1.PersistentVolume, rec, cur machine) error {
	if pvops.Unclaimed(pv) {
		c.event(pv, v1.EventTypeWarning, "MachineReplaced", "Node %s runs on another machine (%s, the disk was on %s); deleting the unused PV",
			node.Name, cur, rec)
		return c.ops.Delete(ctx, pv, true, "machine_replaced")
	}
	return c.markReplaced(ctx, node, pv, rec, cur)
}

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

// markReplaced marks a used PV of a replaced machine and warns on it, its
// claim and the claim's pods, once.
func (c *controller) markReplaced(ctx context.Context, node *v1.Node, pv *v1.PersistentVolume, rec, cur machine) error {
	if marked(pv) {
		return nil
	}
	cp := pv.DeepCopy()
	cp.Annotations[jobs.AnnMachineReplaced] = c.clock.Now().UTC().Format("2006-01-02T15:04:05Z")
	if cp.Labels == nil {
		cp.Labels = map[string]string{}
	}
	cp.Labels[jobs.LabelMachineReplaced] = "true"
	if _, err := c.kube.CoreV1().PersistentVolumes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to mark PV %s machine-replaced: %w", pv.Name, err)
	}
	c.queue.Add(blockedClaimsKey)
	msg := fmt.Sprintf("Node %s now runs on another machine (%s) than this PV's disk (%s); the PV is kept", node.Name, cur, rec)
	if c.opts.ReplacedMachinePolicy == ReplacedMachineBlockPods {
		msg += " and new pods using its claim are refused; delete the claim, or set the PV's " + jobs.AnnMachineID +
			" and " + jobs.AnnSystemUUID + " annotations to the new machine's to accept its disk"
	}
	c.event(pv, v1.EventTypeWarning, "MachineReplaced", "%s", msg)
	c.ops.WarnClaim(ctx, pv, "MachineReplaced", msg, v1.VolumeHealthDataLoss)
	return nil
}

// unmarkReplaced clears the mark of a PV whose machine is back or that an
// admin handed to the current machine.
func (c *controller) unmarkReplaced(ctx context.Context, pv *v1.PersistentVolume) error {
	cp := pv.DeepCopy()
	delete(cp.Annotations, jobs.AnnMachineReplaced)
	delete(cp.Labels, jobs.LabelMachineReplaced)
	if _, err := c.kube.CoreV1().PersistentVolumes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to clear the machine-replaced mark of PV %s: %w", pv.Name, err)
	}
	c.queue.Add(blockedClaimsKey)
	c.event(pv, v1.EventTypeNormal, "MachineMatched", "The PV's machine runs under node %s again; pods may use it", pv.Annotations[jobs.AnnNode])
	c.ops.ClearClaimHealth(ctx, pv)
	return nil
}

// replacedPV reports whether a PV's machine no longer runs under its node's
// name, from its mark or from the node in the cache.
func (c *controller) replacedPV(pv *v1.PersistentVolume) bool {
	if marked(pv) {
		return true
	}
	node, err := c.nodeLister.Get(pv.Annotations[jobs.AnnNode])
	return err == nil && recordedMachine(pv).differs(machineOf(node))
}
