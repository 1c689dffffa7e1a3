package pluginwatcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// watcher wires the stages together:
//
//	fsWatcher (watch) -> desiredState -> reconciler (+ actualState) -> executor
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
	started  bool

	dsw     *desiredState
	asw     *actualState
	queue   workqueue.TypedDelayingInterface[string]
	fs      *fsWatcher
	rec     *reconciler
	slots   *slots
	rep     *reporter
	metrics *watcherMetrics
	wg      sync.WaitGroup
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
		dsw:      newDesiredState(),
		asw:      newActualState(),
		rep:      newReporter(opts),
		metrics:  newWatcherMetrics(),
	}
	w.queue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{})
	w.fs = newFSWatcher(w.dir, w.dsw, w.queue.Add, w.rep, w.metrics)
	w.rec = &reconciler{
		opts:     opts,
		dsw:      w.dsw,
		asw:      w.asw,
		exec:     newExecutor(opts),
		throttle: newThrottler(opts.ThrottleRate, opts.ThrottleBurst, w.queue.Add),
		gate:     newKeyGate(w.queue.Add),
		retries:  newRetries(opts.RetryBase, opts.RetryMax),
		rep:      w.rep,
		metrics:  w.metrics,
		handler:  w.handler,
		enqueue:  w.queue.Add,
		now:      time.Now,
		stat:     lstatSocket,
	}
	w.rec.monitors = newMonitors(w.rec.connectionDropped)
	w.slots = newSlots(opts.MaxInFlight, opts.SuspectInFlight, w.queue.Add)
	w.slots.observe = w.metrics.observeInFlight
	w.slots.waited = w.metrics.observeWait
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
	defer w.mu.Unlock()
	w.handlers[pluginType] = h
}

func (w *watcher) handler(pluginType string) (Handler, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	h, ok := w.handlers[pluginType]
	return h, ok
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
	w.rep.setLogger(logger)
	w.metrics.register(w.opts.MetricsRegistry)
	if err := w.fs.start(ctx); err != nil {
		w.queue.ShutDown()
		return err
	}
	w.wg.Add(3)
	go func() { defer w.wg.Done(); w.rep.run(ctx) }()
	go func() { defer w.wg.Done(); w.fs.run(ctx) }()
	go func() { defer w.wg.Done(); w.dispatch(ctx) }()
	go func() {
		<-ctx.Done()
		w.rec.throttle.stop()
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
		class, gen := w.rec.class(path)
		if ctx.Err() != nil || !w.slots.acquire(path, class) {
			w.queue.Done(path)
			continue
		}
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.process(ctx, path, gen) }()
	}
}

// process runs one attempt for path in the slot dispatch acquired.
func (w *watcher) process(ctx context.Context, path string, gen uint64) {
	defer w.slots.release(path)
	defer w.queue.Done(path)
	defer utilruntime.HandleCrashWithContext(ctx)
	if ctx.Err() != nil {
		return
	}
	if delay := w.rec.attempt(ctx, path, gen); delay > 0 {
		w.queue.AddAfter(path, delay)
	}
}

// wait blocks until every goroutine started by Start has returned.
func (w *watcher) wait() {
	w.wg.Wait()
}
