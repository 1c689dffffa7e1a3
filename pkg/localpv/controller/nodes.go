package controller

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/cleanupjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// syncNode handles a deleted node, checks the machine of a node's PVs and
// drives its discovery, whose accepted reports come back through Consume.
func (c *controller) syncNode(ctx context.Context, name string) error {
	node, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		return c.handleNodeGone(ctx, name)
	}
	if err != nil {
		return err
	}
	if err := c.machines.Check(ctx, node); err != nil {
		return err
	}
	if !c.cfg.NodeMatches(node) {
		c.discovery.Skip(name)
		return nil
	}
	return c.discovery.Sync(ctx, node)
}

// Consume records the inventory of an accepted discovery report and
// publishes its volumes.
func (c *controller) Consume(ctx context.Context, node *v1.Node, res *validation.Result, r *report.Report) error {
	c.inventory.Record(ctx, node.Name, r)
	return c.publisher.Publish(ctx, node, res, r.AllHeld())
}

// requestDiscovery asks for a discovery run on a node.
func (c *controller) requestDiscovery(name string) {
	c.discovery.Request(name)
	c.queue.Add(nodeKey(name))
}

// forgetNode drops the memory of a node that is gone.
func (c *controller) forgetNode(name string) {
	c.discovery.Forget(name)
	c.inventory.Forget(name)
	c.machines.Forget(name)
	c.publisher.Forget(name)
}

// handleNodeGone deletes the unbound PVs of a deleted node when configured.
// A released PV keeps a cleanup Job as its lock: it waits, unscheduled, for
// the node to come back, and wipes the disk before it is published again.
func (c *controller) handleNodeGone(ctx context.Context, name string) error {
	c.forgetNode(name)
	// The cache may lag a re-registration; ask the apiserver.
	if _, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.inventory.Delete(ctx, name); err != nil {
		return err
	}
	if !c.cfg.DeleteUnboundPVsOfDeletedNodes {
		return nil
	}
	pvs, err := c.pvsOnNode(name)
	if err != nil || len(pvs) == 0 {
		return err
	}
	var errs []error
	for _, pv := range pvs {
		switch {
		case pv.DeletionTimestamp != nil:
		case cleanupjobs.NodeGone(pv): // its claim is released; the cleanup drops it without a wipe
		case pvops.Unclaimed(pv):
			errs = append(errs, c.ops.Delete(ctx, pv, true, "node_deleted"))
		case pvops.Cleanable(pv):
			if err := c.cleanup.Ensure(ctx, pv); err != nil {
				errs = append(errs, err)
				continue
			}
			// The Job waits for the node; the disk is remembered until a
			// wipe of it succeeds, in case the Job is lost with the PV gone.
			if err := c.unwiped.Remember(ctx, pv, "node "+name+" deleted with a wipe pending"); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := c.ops.RemoveFinalizer(ctx, pv); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, c.ops.Delete(ctx, pv, false, "node_deleted"))
		}
	}
	return errors.Join(errs...)
}
