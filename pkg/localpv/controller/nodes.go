package controller

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
	return c.reconcileNode(ctx, node, res, r.Held)
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
}
