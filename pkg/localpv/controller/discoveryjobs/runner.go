package discoveryjobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchclient "k8s.io/client-go/kubernetes/typed/batch/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// PodGracePeriod is how long a finished discovery Job may lack its pod in
// the cache before its result is given up.
const PodGracePeriod = 2 * time.Minute

var errPodNotSynced = errors.New("discovery pod not in cache yet")

// Runner runs the nodes' discovery Jobs. It is safe for concurrent use.
// Request, Notice, Skip and Forget only change its memory; the caller
// queues the node, whose next Sync acts on it.
type Runner interface {
	// Request asks for a discovery run on a node.
	Request(node string)
	// Notice asks for a run when a NodeDiskState's generation is one not
	// acted on yet (or 0), and reports whether it did.
	Notice(node string, generation int64) bool
	// Skip drops the request of a node the node selector does not match.
	Skip(node string)
	// Forget drops the memory of a node that is gone.
	Forget(node string)
	// Sync drives the node's discovery Job: without one it creates one
	// when a run was requested (asking for the node to be queued again
	// after a rate-limit or backoff delay); with a finished one (or one
	// whose pod succeeded) it consumes the report once and deletes the
	// Job. An error means the node is to be synced again.
	Sync(ctx context.Context, node *v1.Node) error
}

// Consumer acts on an accepted report: it publishes its volumes. An error
// leaves the Job unconsumed, so the report is consumed again.
type Consumer interface {
	Consume(ctx context.Context, node *v1.Node, res *validation.Result, r *report.Report) error
}

// Config is what a Runner reads, writes and tells.
type Config struct {
	// Provisioner is the parsed ConfigMap.
	Provisioner *config.Configuration
	Params      jobs.Params
	Client      batchclient.JobsGetter
	// Jobs and Pods are the caches of the master's Jobs and their pods.
	Jobs     batchlisters.JobLister
	Pods     jobs.JobPods
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// QPS and Burst limit how fast Jobs are created (QPS <= 0: no limit).
	QPS   float64
	Burst int
	// RetryBase and RetryMax bound the backoff of unusable runs.
	RetryBase, RetryMax time.Duration
	// HeldPaths returns the paths of the node's other local PVs, which
	// the Job resolves.
	HeldPaths func(node *v1.Node) []string
	// Requeue asks for the node to be synced again after a delay.
	Requeue  func(node string, after time.Duration)
	Consumer Consumer
}

type runner struct {
	Config
	limiter *rate.Limiter

	mu    sync.Mutex
	nodes map[string]*nodeState
}

var _ Runner = &runner{}

// New returns a Runner.
func New(cfg Config) Runner {
	qps := rate.Limit(cfg.QPS)
	if cfg.QPS <= 0 {
		qps = rate.Inf
	}
	return &runner{Config: cfg, limiter: rate.NewLimiter(qps, max(cfg.Burst, 1)), nodes: map[string]*nodeState{}}
}

func (r *runner) backoff(n int) time.Duration { return jobs.Backoff(r.RetryBase, r.RetryMax, n) }

func (r *runner) Sync(ctx context.Context, node *v1.Node) error {
	job, err := r.Jobs.Jobs(r.Params.Namespace).Get(naming.DiscoveryJobName(node.Name))
	switch {
	case err == nil:
		return r.handleJob(ctx, node, job)
	case !apierrors.IsNotFound(err):
		return err
	}
	return r.maybeStart(ctx, node)
}

// maybeStart creates the node's discovery Job when one was requested,
// within the rate limit and any failure backoff.
func (r *runner) maybeStart(ctx context.Context, node *v1.Node) error {
	now := r.Clock.Now()
	var wait time.Duration
	start, shards := false, 0
	r.withNode(node.Name, func(st *nodeState) {
		shards = st.shards
		switch {
		case !st.wantDiscovery:
		case now.Before(st.notBefore):
			wait = st.notBefore.Sub(now)
		case !st.reserved:
			if d := r.limiter.ReserveN(now, 1).DelayFrom(now); d > 0 {
				st.reserved, st.notBefore, wait = true, now.Add(d), d
				return
			}
			fallthrough
		default:
			st.reserved, st.wantDiscovery, start = false, false, true
		}
	})
	if wait > 0 {
		r.Requeue(node.Name, wait)
	}
	if !start {
		return nil
	}
	job := jobs.DiscoveryJob(r.Params, r.Provisioner, node.Name, shards, r.HeldPaths(node))
	if _, err := r.Client.Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		r.Request(node.Name)
		if apierrors.IsAlreadyExists(err) {
			return nil // the Job's events will requeue the node
		}
		return fmt.Errorf("failed to create discovery Job for node %s: %w", node.Name, err)
	}
	metrics.JobsCreated.WithLabelValues(metrics.KindDiscovery).Inc()
	klog.FromContext(ctx).V(2).Info("Created discovery Job", "node", node.Name, "job", klog.KObj(job))
	return nil
}

// handleJob consumes a finished discovery Job once, then deletes it. Its
// deletion requeues the node, which starts the next run if one was
// requested meanwhile.
//
// A Succeeded pod is final and carries the whole report, so it is consumed
// as soon as the pod informer shows it, without waiting for the Job
// controller to mark the Job complete (which batches pod updates for about a
// second).
func (r *runner) handleJob(ctx context.Context, node *v1.Node, job *batchv1.Job) error {
	if job.DeletionTimestamp != nil {
		return nil
	}
	if finished, _ := jobs.IsFinished(job); !finished {
		if _, _, err := r.output(job); err != nil {
			return nil // still running; the pod's or the Job's update requeues the node
		}
	}
	var processed bool
	r.withNode(node.Name, func(st *nodeState) { processed = st.processed == job.UID })
	if !processed {
		if err := r.process(ctx, node, job); err != nil {
			return err
		}
		r.withNode(node.Name, func(st *nodeState) { st.processed = job.UID })
	}
	return jobs.Delete(ctx, r.Client, job)
}

func (r *runner) process(ctx context.Context, node *v1.Node, job *batchv1.Job) error {
	end := r.Clock.Now()
	cond, finished := jobs.FinishTime(job)
	if finished {
		end = cond.LastTransitionTime.Time
	}
	elapsed := end.Sub(job.CreationTimestamp.Time).Seconds()
	if _, succeeded := jobs.IsFinished(job); finished && !succeeded {
		metrics.DiscoveryDuration.WithLabelValues("failed").Observe(elapsed)
		return r.failed(node, fmt.Sprintf("%s: %s", cond.Reason, r.podMessage(job)))
	}
	pod, msgs, err := r.output(job)
	if errors.Is(err, errPodNotSynced) && r.Clock.Since(end) < PodGracePeriod {
		return err
	}
	if err != nil {
		return r.failed(node, err.Error())
	}
	rep, err := report.Decode(msgs)
	if more, ok := errors.AsType[*report.NeedShardsError](err); ok {
		metrics.DiscoveryDuration.WithLabelValues("resharded").Observe(elapsed)
		return r.needsShards(node, more.Shards)
	}
	if errors.Is(err, report.ErrShardsDisagree) {
		metrics.DiscoveryDuration.WithLabelValues("inconsistent").Observe(elapsed)
		return r.inconsistent(node, err)
	}
	metrics.DiscoveryDuration.WithLabelValues("succeeded").Observe(elapsed)
	r.withNode(node.Name, func(st *nodeState) { st.failures = 0 })
	if err != nil {
		return r.reject(node, "Undecodable", err)
	}
	res, err := validation.Check(r.Provisioner, job.Annotations[jobs.AnnNode], pod.Spec.NodeName, rep)
	if err != nil {
		return r.reject(node, "WrongNode", err)
	}
	r.recordRejections(node, res.Rejected)
	r.recordSkipped(node, rep)
	return r.Consumer.Consume(ctx, node, res, rep)
}

// output returns the succeeded pod of a Job and its containers'
// termination messages, in container order (see jobs.PodSucceeded).
func (r *runner) output(job *batchv1.Job) (*v1.Pod, []string, error) {
	pods, err := r.jobPods(job)
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

func (r *runner) jobPods(job *batchv1.Job) ([]*v1.Pod, error) {
	return r.Pods.Of(job)
}

// podMessage returns the first termination message of a Job's failed pods.
func (r *runner) podMessage(job *batchv1.Job) string {
	pods, err := r.jobPods(job)
	if err != nil {
		return ""
	}
	return pvops.Truncate(jobs.FailureMessage(pods), 512)
}
