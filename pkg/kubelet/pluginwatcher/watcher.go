package pluginwatcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/reconciler"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/slots"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/throttle"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/watch"
)

// watcher wires the stages together:
//
//	watch -> cache (desired state) -> reconciler (+ cache's actual state) -> executor
//
// The fs watcher only records which sockets exist and queues their paths;
// a dispatcher takes paths from a per-socket work queue and starts one
// goroutine per attempt, in which the reconciler converges that path; the
// reconciler uses the executor for gRPC and file side effects and the
// handlers for registration. Attempts wait on the network without holding
// anything scarce but an in-flight slot (slots), and suspect sockets may
// only use part of those.
type watcher struct {
	dir  string
	opts Options

	mu       sync.RWMutex
	handlers map[string]Handler
	// pending are the reasons of the types ExpectHandler declared that
	// have no handler yet.
	pending map[string]string
	started bool

	dsw      cache.DesiredStateOfWorld
	asw      cache.ActualStateOfWorld
	queue    workqueue.TypedDelayingInterface[string]
	fs       watch.Watcher
	rec      reconciler.Reconciler
	throttle *throttle.Buckets
	slots    *slots.Slots
	rep      *report.RateLimited
	metrics  *metrics.Metrics
	wg       sync.WaitGroup
}

var _ Watcher = &watcher{}

// NewWatcher returns a Watcher for the directory tree at dir.
func NewWatcher(dir string, opts Options) (Watcher, error) {
	return newWatcher(dir, opts)
}

func newWatcher(dir string, opts Options) (*watcher, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("plugin directory must be an absolute path, got %q", dir)
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("invalid plugin watcher options: %w", err)
	}
	w := &watcher{
		dir:      filepath.Clean(dir),
		opts:     opts,
		handlers: map[string]Handler{},
		pending:  map[string]string{},
		dsw:      cache.NewDesiredStateOfWorld(nil),
		asw:      cache.NewActualStateOfWorld(),
		rep:      report.New(opts.reportConfig()),
		metrics:  metrics.New(),
	}
	w.queue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{})
	w.fs = watch.New(w.dir, w.dsw, w.queue.Add, w.rep, w.metrics, opts.newDirWatcher)
	w.throttle = throttle.New(opts.ThrottleRate, opts.ThrottleBurst, w.queue.Add, nil)
	w.rec = reconciler.New(opts.reconcilerConfig(), reconciler.Dependencies{
		DesiredState: w.dsw,
		ActualState:  w.asw,
		Executor:     executor.New(opts.DialTimeout, opts.RPCTimeout),
		// The monitor reports drops only once attempts run, after w.rec
		// is set.
		Monitor:  executor.NewMonitor(func(path string) { w.rec.ConnectionDropped(path) }),
		Throttle: w.throttle,
		Reporter: w.rep,
		Metrics:  w.metrics,
		Handler:  w.handler,
		Pending:  w.pendingReason,
		Enqueue:  w.queue.Add,
	})
	w.slots = slots.New(opts.MaxInFlight, opts.SuspectInFlight, w.queue.Add, w.metrics)
	return w, nil
}

func (w *watcher) AddHandler(pluginType string, h Handler) {
	if h == nil {
		panic(fmt.Sprintf("pluginwatcher: nil handler for plugin type %q", pluginType))
	}
	if err := ValidatePluginType(pluginType); err != nil {
		panic("pluginwatcher: " + err.Error())
	}
	w.mu.Lock()
	w.handlers[pluginType] = h
	delete(w.pending, pluginType)
	w.mu.Unlock()
	w.rec.HandlerAdded(pluginType)
}

func (w *watcher) ExpectHandler(pluginType, reason string) {
	if err := ValidatePluginType(pluginType); err != nil {
		panic("pluginwatcher: " + err.Error())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.handlers[pluginType]; !ok {
		w.pending[pluginType] = reason
	}
}

func (w *watcher) handler(pluginType string) (Handler, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	h, ok := w.handlers[pluginType]
	return h, ok
}

func (w *watcher) pendingReason(pluginType string) (string, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	r, ok := w.pending[pluginType]
	return r, ok
}

func (w *watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("plugin watcher already started")
	}
	w.started = true
	w.mu.Unlock()

	logger := klog.FromContext(ctx).WithName("pluginwatcher").WithValues("dir", w.dir)
	ctx = klog.NewContext(ctx, logger)
	w.rep.SetLogger(logger)
	w.metrics.Register(w.opts.MetricsRegistry)
	if err := w.fs.Start(ctx); err != nil {
		w.queue.ShutDown()
		return err
	}
	w.wg.Add(3)
	go func() { defer w.wg.Done(); w.rep.Run(ctx) }()
	go func() { defer w.wg.Done(); w.fs.Run(ctx) }()
	go func() { defer w.wg.Done(); w.dispatch(ctx) }()
	go func() {
		<-ctx.Done()
		w.throttle.Stop()
		w.queue.ShutDown()
	}()
	logger.Info("Plugin watcher started", "maxInFlight", w.opts.MaxInFlight, "suspectInFlight", w.opts.SuspectInFlight,
		"identityPolicy", w.opts.IdentityPolicy, "throttleRate", w.opts.ThrottleRate, "throttleBurst", w.opts.ThrottleBurst)
	return nil
}

// dispatch starts an attempt for each path taken from the queue, in its
// own goroutine, if the path's share of the in-flight slots has room;
// otherwise the path is parked in slots, which requeues it with a slot
// granted once one frees. dispatch itself never waits for a plugin.
func (w *watcher) dispatch(ctx context.Context) {
	for {
		path, quit := w.queue.Get()
		if quit {
			return
		}
		class, gen := w.rec.Class(path)
		if ctx.Err() != nil || !w.slots.Acquire(path, class) {
			w.queue.Done(path)
			continue
		}
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.process(ctx, path, gen) }()
	}
}

// process runs one attempt for path in the slot dispatch acquired.
func (w *watcher) process(ctx context.Context, path string, gen uint64) {
	defer w.slots.Release(path)
	defer w.queue.Done(path)
	defer utilruntime.HandleCrashWithContext(ctx)
	if ctx.Err() != nil {
		return
	}
	if delay := w.rec.Attempt(ctx, path, gen); delay > 0 {
		w.queue.AddAfter(path, delay)
	}
}

// wait blocks until every goroutine started by Start has returned.
func (w *watcher) wait() {
	w.wg.Wait()
}
