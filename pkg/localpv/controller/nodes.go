package controller

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
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

// firstSeen reports whether a finished Job's result is seen for the first
// time, and remembers it.
func (c *controller) firstSeen(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seenJobs[string(uid)] {
		return false
	}
	c.seenJobs[string(uid)] = true
	return true
}

func (c *controller) forgetJob(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.seenJobs, string(uid))
	delete(c.seenJobs, string(mismatchKey(uid)))
}

// podMessage returns the first termination message of a Job's failed pods,
// for Events.
func (c *controller) podMessage(job *batchv1.Job) string {
	pods, err := c.podLister.Pods(job.Namespace).List(labels.SelectorFromSet(labels.Set{batchv1.JobNameLabel: job.Name}))
	if err != nil {
		return ""
	}
	return pvops.Truncate(jobs.FailureMessage(pods), 512)
}
