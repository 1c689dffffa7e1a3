package machine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// Checker checks the machine of a node's PVs against the machine the node
// runs on now. It is safe for concurrent use.
type Checker interface {
	// Check handles each PV of the node that is not being deleted: one
	// that records no machine is adopted by the node's machine; one of
	// another machine is deleted when unused, and otherwise marked
	// machine-replaced (annotation and label) with Warnings on it and its
	// claim; a marked one whose machine matches again is unmarked. A node
	// that reports no identity is left as it is. The first replacement
	// seen per node and machine is counted and reported on the Node.
	Check(ctx context.Context, node *v1.Node) error
	// Forget drops what is remembered of a node that is gone.
	Forget(node string)
}

// PVs finds the master's PVs of a node name, of every machine that ran
// under it.
type PVs interface {
	OnNode(node string) ([]*v1.PersistentVolume, error)
}

// Config is what a Checker reads, writes and tells.
type Config struct {
	PVs PVs
	// Marks writes the PVs' marks and recorded machines.
	Marks    pvstate.Writer
	Ops      pvops.Interface
	Recorder record.EventRecorder
	// BlockPods says that new pods of a marked PV's claim are refused
	// (the policy writer blocks them); the Warning then says so.
	BlockPods bool
	// MarksChanged is called after a PV was marked or unmarked, so that
	// the blocked claims are written again.
	MarksChanged func()
}

type checker struct {
	Config

	mu sync.Mutex
	// replacedBy is the machine each node was last reported to run on
	// instead of its PVs' machine.
	replacedBy map[string]Identity
}

var _ Checker = &checker{}

// New returns a Checker.
func New(cfg Config) Checker {
	return &checker{Config: cfg, replacedBy: map[string]Identity{}}
}

func (c *checker) Check(ctx context.Context, node *v1.Node) error {
	cur := Of(node)
	if !cur.Known() {
		return nil
	}
	pvs, err := c.PVs.OnNode(node.Name)
	if err != nil {
		return err
	}
	var errs []error
	var replaced []string
	for _, pv := range pvs {
		rec := Recorded(pv)
		switch {
		case pv.DeletionTimestamp != nil:
		case !rec.Known():
			errs = append(errs, c.record(ctx, pv, cur))
		case rec.Differs(cur):
			replaced = append(replaced, pv.Name)
			errs = append(errs, c.handleReplaced(ctx, node, pv, rec, cur))
		case Marked(pv):
			errs = append(errs, c.unmark(ctx, pv))
		}
	}
	if len(replaced) > 0 {
		c.noteReplacement(node, cur, replaced)
	}
	return errors.Join(errs...)
}

func (c *checker) Forget(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.replacedBy, node)
}

// noteReplacement counts and reports a node's new machine once per master.
func (c *checker) noteReplacement(node *v1.Node, cur Identity, pvs []string) {
	c.mu.Lock()
	first := c.replacedBy[node.Name] != cur
	c.replacedBy[node.Name] = cur
	c.mu.Unlock()
	if !first {
		return
	}
	metrics.MachineReplacements.Inc()
	slices.Sort(pvs)
	c.Recorder.Eventf(node, v1.EventTypeWarning, "MachineReplaced",
		"Node now runs on another machine (%s) than the one its %d PVs were published for (%s): they are never published for this machine; unused ones are deleted, used ones are kept and marked %s",
		cur, len(pvs), pvops.Truncate(fmt.Sprint(pvs), 256), jobs.LabelMachineReplaced)
}

// record adopts a PV published before machines were recorded for the
// machine its node runs on now.
func (c *checker) record(ctx context.Context, pv *v1.PersistentVolume, cur Identity) error {
	if _, _, err := c.Marks.Apply(ctx, pv, pvstate.RecordMachine(cur.ID, cur.UUID)); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Recorded the machine of a PV", "pv", pv.Name, "machineID", cur.ID, "systemUUID", cur.UUID)
	return nil
}

// handleReplaced deletes an unused PV of a replaced machine and marks a
// used one. A released PV is kept and marked too: no cleanup Job runs for it
// (one pinned to the node name would run on the new machine), and only a
// discovery report decides: the same disk at its path hands it to the new
// machine, which wipes it; a provably different disk drops it without a wipe.
func (c *checker) handleReplaced(ctx context.Context, node *v1.Node, pv *v1.PersistentVolume, rec, cur Identity) error {
	if pvops.Unclaimed(pv) {
		c.Recorder.Eventf(pv, v1.EventTypeWarning, "MachineReplaced", "Node %s runs on another machine (%s, the disk was on %s); deleting the unused PV",
			node.Name, cur, rec)
		return c.Ops.Delete(ctx, pv, true, "machine_replaced")
	}
	return c.mark(ctx, node, pv, rec, cur)
}

// mark marks a used PV of a replaced machine and warns on it and its
// claim, once.
func (c *checker) mark(ctx context.Context, node *v1.Node, pv *v1.PersistentVolume, rec, cur Identity) error {
	if _, marked, err := c.Marks.Apply(ctx, pv, pvstate.MarkMachineReplaced); err != nil || !marked {
		return err
	}
	c.MarksChanged()
	msg := fmt.Sprintf("Node %s runs on a new machine (%s); the PV is kept", node.Name, cur)
	if c.BlockPods {
		msg += " and new pods using its claim are refused"
	}
	msg += ": " + pvstate.MachineReplacedCause(node.Name, pv.Annotations[jobs.AnnHostPath], rec.String())
	c.Recorder.Eventf(pv, v1.EventTypeWarning, "MachineReplaced", "%s", msg)
	c.Ops.WarnClaim(ctx, pv, "MachineReplaced", msg, v1.VolumeHealthDataLoss)
	return nil
}

// unmark clears the mark of a PV whose machine is back or that an admin
// handed to the current machine.
func (c *checker) unmark(ctx context.Context, pv *v1.PersistentVolume) error {
	if _, _, err := c.Marks.Apply(ctx, pv, pvstate.ClearMachineReplaced); err != nil {
		return err
	}
	c.MarksChanged()
	c.Recorder.Eventf(pv, v1.EventTypeNormal, "MachineMatched", "The PV's machine runs under node %s again; pods may use it", pv.Annotations[jobs.AnnNode])
	c.Ops.ClearClaimHealth(ctx, pv)
	return nil
}
