package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// podGracePeriod is how long a finished discovery Job may lack its pod in
// the cache before its result is given up.
const podGracePeriod = 2 * time.Minute

var errPodNotSynced = errors.New("discovery pod not in cache yet")

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
		c.withNode(name, func(st *nodeState) { st.wantDiscovery = false })
		return nil
	}
	job, err := c.jobLister.Jobs(c.opts.Jobs.Namespace).Get(naming.DiscoveryJobName(name))
	switch {
	case err == nil:
		return c.handleDiscoveryJob(ctx, node, job)
	case !apierrors.IsNotFound(err):
		return err
	}
	return c.maybeStartDiscovery(ctx, node)
}

// maybeStartDiscovery creates the node's discovery Job when one was
// requested, within the rate limit and any failure backoff.
func (c *controller) maybeStartDiscovery(ctx context.Context, node *v1.Node) error {
	now := c.clock.Now()
	var wait time.Duration
	start, shards := false, 0
	c.withNode(node.Name, func(st *nodeState) {
		shards = st.shards
		switch {
		case !st.wantDiscovery:
		case now.Before(st.notBefore):
			wait = st.notBefore.Sub(now)
		case !st.reserved:
			if d := c.limiter.ReserveN(now, 1).DelayFrom(now); d > 0 {
				st.reserved, st.notBefore, wait = true, now.Add(d), d
				return
			}
			fallthrough
		default:
			st.reserved, st.wantDiscovery, start = false, false, true
		}
	})
	if wait > 0 {
		c.queue.AddAfter(nodeKey(node.Name), wait)
	}
	if !start {
		return nil
	}
	job := jobs.DiscoveryJob(c.opts.Jobs, c.cfg, node.Name, shards, c.heldPaths(node))
	_, err := c.kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		c.withNode(node.Name, func(st *nodeState) { st.wantDiscovery = true })
		if apierrors.IsAlreadyExists(err) {
			return nil // the Job's events will requeue the node
		}
		return fmt.Errorf("failed to create discovery Job for node %s: %w", node.Name, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindDiscovery).Inc()
	klog.FromContext(ctx).V(2).Info("Created discovery Job", "node", node.Name, "job", klog.KObj(job))
	return nil
}

// handleDiscoveryJob consumes a finished discovery Job once, then deletes it.
// Its deletion requeues the node, which starts the next run if one was
// requested meanwhile.
//
// A Succeeded pod is final and carries the whole report, so it is consumed
// as soon as the pod informer shows it, without waiting for the Job
// controller to mark the Job complete (which batches pod updates for about a
// second).
func (c *controller) handleDiscoveryJob(ctx context.Context, node *v1.Node, job *batchv1.Job) error {
	if job.DeletionTimestamp != nil {
		return nil
	}
	if finished, _ := jobs.IsFinished(job); !finished {
		if _, _, err := c.discoveryOutput(job); err != nil {
			return nil // still running; the pod's or the Job's update requeues the node
		}
	}
	var processed bool
	c.withNode(node.Name, func(st *nodeState) { processed = st.processed == job.UID })
	if !processed {
		if err := c.processDiscovery(ctx, node, job); err != nil {
			return err
		}
		c.withNode(node.Name, func(st *nodeState) { st.processed = job.UID })
	}
	return jobs.Delete(ctx, c.kube.BatchV1(), job)
}

func (c *controller) processDiscovery(ctx context.Context, node *v1.Node, job *batchv1.Job) error {
	end := c.clock.Now()
	cond, finished := jobs.FinishTime(job)
	if finished {
		end = cond.LastTransitionTime.Time
	}
	elapsed := end.Sub(job.CreationTimestamp.Time).Seconds()
	if _, succeeded := jobs.IsFinished(job); finished && !succeeded {
		metrics.DiscoveryDuration.WithLabelValues("failed").Observe(elapsed)
		return c.discoveryFailed(node, fmt.Sprintf("%s: %s", cond.Reason, c.podMessage(job)))
	}
	pod, msgs, err := c.discoveryOutput(job)
	if errors.Is(err, errPodNotSynced) && c.clock.Since(end) < podGracePeriod {
		return err
	}
	if err != nil {
		return c.discoveryFailed(node, err.Error())
	}
	r, err := report.Decode(msgs)
	if more, ok := errors.AsType[*report.NeedShardsError](err); ok {
		metrics.DiscoveryDuration.WithLabelValues("resharded").Observe(elapsed)
		return c.discoveryNeedsShards(node, more.Shards)
	}
	if errors.Is(err, report.ErrShardsDisagree) {
		metrics.DiscoveryDuration.WithLabelValues("inconsistent").Observe(elapsed)
		return c.discoveryInconsistent(node, err)
	}
	metrics.DiscoveryDuration.WithLabelValues("succeeded").Observe(elapsed)
	c.withNode(node.Name, func(st *nodeState) { st.failures = 0 })
	if err != nil {
		return c.rejectReport(node, "Undecodable", err)
	}
	res, err := validation.Check(c.cfg, job.Annotations[jobs.AnnNode], pod.Spec.NodeName, r)
	if err != nil {
		return c.rejectReport(node, "WrongNode", err)
	}
	c.recordRejections(node, res.Rejected)
	c.recordSkipped(node, r)
	c.inventory.Record(ctx, node.Name, r)
	return c.reconcileNode(ctx, node, res, r.Held)
}

// discoveryFailed reports a failed run and schedules a retry with backoff.
func (c *controller) discoveryFailed(node *v1.Node, msg string) error {
	metrics.JobFailures.WithLabelValues(metrics.KindDiscovery).Inc()
	c.event(node, v1.EventTypeWarning, "DiscoveryFailed", "Discovery Job failed: %s", msg)
	c.retryDiscovery(node.Name)
	return nil
}

// discoveryNeedsShards runs discovery again at once with the number of
// containers the node's report needs, and keeps that number for the node.
// Decode only accepts requests for more containers than the run had, up to
// report.MaxShards, so a node cannot make this loop.
func (c *controller) discoveryNeedsShards(node *v1.Node, shards int) error {
	c.event(node, v1.EventTypeNormal, "DiscoveryResharded",
		"The discovery report needs %d containers; running discovery again with %d", shards, shards)
	c.withNode(node.Name, func(st *nodeState) {
		st.shards = shards
		st.wantDiscovery = true
	})
	return nil
}

// discoveryInconsistent handles a report whose shards were scanned from
// different states of the disks: each container of a discovery pod scans on
// its own, and a disk changed between their scans. This is neither a failed Job
// nor a rejected report; discovery runs again after the backoff, which also
// bounds what a node forging such reports can cause.
func (c *controller) discoveryInconsistent(node *v1.Node, err error) error {
	c.event(node, v1.EventTypeNormal, "DiscoveryRetried", "Disks changed during discovery, running it again: %v", err)
	c.retryDiscovery(node.Name)
	return nil
}

// retryDiscovery requests another discovery run after the backoff of the
// node's consecutive unusable runs.
func (c *controller) retryDiscovery(name string) {
	now := c.clock.Now()
	c.withNode(name, func(st *nodeState) {
		st.failures++
		st.wantDiscovery = true
		st.notBefore = now.Add(jobs.Backoff(c.opts.RetryBase, c.opts.RetryMax, st.failures))
	})
}

func (c *controller) rejectReport(node *v1.Node, reason string, err error) error {
	metrics.RejectedReports.WithLabelValues(reason).Inc()
	c.event(node, v1.EventTypeWarning, "DiscoveryReportRejected", "Discovery report rejected: %v", err)
	return nil
}

// maxVolumeEvents bounds the per-volume Events of one report.
const maxVolumeEvents = 10

func (c *controller) recordRejections(node *v1.Node, rejected []validation.Rejection) {
	for i, r := range rejected {
		metrics.RejectedVolumes.WithLabelValues(r.Reason).Inc()
		if i < maxVolumeEvents {
			c.event(node, v1.EventTypeWarning, "VolumeRejected", "Class %s entry %q rejected (%s): %s", r.Class, r.Name, r.Reason, r.Message)
		}
	}
	if len(rejected) > maxVolumeEvents {
		c.event(node, v1.EventTypeWarning, "VolumeRejected", "%d more entries rejected", len(rejected)-maxVolumeEvents)
	}
}

// recordSkipped tells the admin why matching entries got no PV, the most
// common support question of static provisioners.
func (c *controller) recordSkipped(node *v1.Node, r *report.Report) {
	for _, cl := range r.Classes {
		if cl.Error != "" {
			c.event(node, v1.EventTypeWarning, "ClassDirectoryUnreadable", "Class %s: %s", cl.Name, cl.Error)
		}
		if cl.SkippedTotal == 0 {
			continue
		}
		first := ""
		if len(cl.Skipped) > 0 {
			first = fmt.Sprintf(", e.g. %q: %s", cl.Skipped[0].Name, cl.Skipped[0].Reason)
		}
		c.event(node, v1.EventTypeNormal, "VolumesSkipped", "Class %s: %d entries skipped%s", cl.Name, cl.SkippedTotal, first)
	}
}

// discoveryOutput returns the succeeded pod of a Job and its containers'
// termination messages, in container order. A pod counts as succeeded as
// soon as every container has terminated with exit code 0: with
// restartPolicy Never that is final, and the kubelet reports it about a
// second before it sets the phase, which waits for the pod's sandbox to be
// torn down.
func (c *controller) discoveryOutput(job *batchv1.Job) (*v1.Pod, []string, error) {
	pods, err := c.podLister.Pods(job.Namespace).List(labels.SelectorFromSet(labels.Set{batchv1.JobNameLabel: job.Name}))
	if err != nil {
		return nil, nil, err
	}
	for _, pod := range pods {
		if !jobs.PodSucceeded(pod) || !jobs.OwnedBy(pod, job) {
			continue
		}
		msgs := make([]string, 0, len(pod.Spec.Containers))
		for _, ctr := range pod.Spec.Containers {
			msgs = append(msgs, jobs.TerminationMessage(pod, ctr.Name))
		}
		return pod, msgs, nil
	}
	return nil, nil, errPodNotSynced
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
