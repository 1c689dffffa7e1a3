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
// workers take paths from a per-socket work queue and let the reconciler
// converge each one; the reconciler uses the executor for gRPC and file
// side effects and the handlers for registration.
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
	}
	w.rec.monitors = newMonitors(w.rec.connectionDropped)
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
	w.wg.Add(2 + w.opts.Workers)
	go func() { defer w.wg.Done(); w.rep.run(ctx) }()
	go func() { defer w.wg.Done(); w.fs.run(ctx) }()
	for range w.opts.Workers {
		go func() { defer w.wg.Done(); w.work(ctx) }()
	}
	go func() {
		<-ctx.Done()
		w.rec.throttle.stop()
		w.queue.ShutDown()
	}()
	logger.Info("Plugin watcher started", "workers", w.opts.Workers, "identityPolicy", w.opts.IdentityPolicy,
		"throttleRate", w.opts.ThrottleRate, "throttleBurst", w.opts.ThrottleBurst)
	return nil
}

func (w *watcher) work(ctx context.Context) {
	for {
		path, quit := w.queue.Get()
		if quit {
			return
		}
		w.process(ctx, path)
	}
}

func (w *watcher) process(ctx context.Context, path string) {
	defer w.queue.Done(path)
	defer utilruntime.HandleCrashWithContext(ctx)
	if ctx.Err() != nil {
		return
	}
	if delay := w.rec.sync(ctx, path); delay > 0 {
		w.queue.AddAfter(path, delay)
	}
}

// wait blocks until every goroutine started by Start has returned.
func (w *watcher) wait() {
	w.wg.Wait()
}
