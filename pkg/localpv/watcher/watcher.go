package watcher

import (
	"context"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// Options configure a Watcher.
type Options struct {
	// Classes are the directories to watch, as mounted in the watcher.
	Classes []discovery.ClassSpec
	// MountInfoPath is the mount table to watch; default /proc/self/mountinfo.
	MountInfoPath string
	// Debounce groups bursts of file events, and is the least time between
	// two looks at the disks; default 100ms. See pacer.
	Debounce time.Duration
	// Resync is the period of the safety rescan; default 1m.
	Resync time.Duration
	// RetryBase and RetryMax bound the backoff of failed notifications.
	RetryBase, RetryMax time.Duration
}

// Watcher watches one node's discovery directories.
type Watcher interface {
	// Run watches until ctx ends. It notifies once at start, then whenever
	// the view changes.
	Run(ctx context.Context) error
}

type watcher struct {
	opts     Options
	scanner  *discovery.Scanner
	notifier Notifier
}

var _ Watcher = &watcher{}

// New returns a Watcher.
func New(opts Options, scanner *discovery.Scanner, notifier Notifier) Watcher {
	if opts.MountInfoPath == "" {
		opts.MountInfoPath = discovery.SelfMountInfo
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Resync <= 0 {
		opts.Resync = time.Minute
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.RetryMax < opts.RetryBase {
		opts.RetryMax = max(opts.RetryBase, time.Minute)
	}
	return &watcher{opts: opts, scanner: scanner, notifier: notifier}
}

func (w *watcher) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = fsw.Close() }()
	files, mounts := make(chan struct{}, 1), make(chan struct{}, 1)
	poke := func(ch chan struct{}) func() {
		return func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	w.addWatches(ctx, fsw)
	go func() {
		if err := watchMounts(ctx, w.opts.MountInfoPath, poke(mounts)); err != nil {
			logger.Error(err, "Mount table watch stopped; relying on resync")
		}
	}()
	go w.forwardEvents(ctx, fsw, poke(files))
	return w.loop(ctx, fsw, files, mounts)
}

// loop turns signals into notifications, paced by a pacer, and recomputes
// the view from scratch each time. A failed notification is retried with
// backoff.
func (w *watcher) loop(ctx context.Context, fsw *fsnotify.Watcher, files, mounts <-chan struct{}) error {
	logger := klog.FromContext(ctx)
	resync := time.NewTicker(w.opts.Resync)
	defer resync.Stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	p := &pacer{debounce: w.opts.Debounce}
	p.retry(time.Now())
	reason, last, failures := v1alpha1.ReasonStarted, "", 0
	// arm sets the timer to when the pacer says the next look is due.
	arm := func(due time.Time) { timer.Reset(time.Until(due)) }
	changed := func() {
		if reason != v1alpha1.ReasonStarted {
			reason = v1alpha1.ReasonChanged
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-files:
			changed()
			arm(p.fileEvent(time.Now()))
		case <-mounts:
			changed()
			arm(p.mountEvent(time.Now()))
		case <-resync.C:
			w.addWatches(ctx, fsw)
			if p.idle() && reason != v1alpha1.ReasonStarted {
				reason = v1alpha1.ReasonResync
			}
			arm(p.retry(time.Now()))
		case <-timer.C:
			p.running(time.Now())
			v, err := ComputeView(w.scanner, w.opts.Classes, w.opts.MountInfoPath)
			if err != nil {
				failures++
				logger.Error(err, "Failed to compute view", "failures", failures)
				arm(p.retry(time.Now().Add(w.backoff(failures))))
				continue
			}
			if v.Digest == last {
				continue
			}
			if err := w.notifier.Notify(ctx, v, reason); err != nil {
				failures++
				metrics.WatcherNotifications.WithLabelValues(string(reason), "error").Inc()
				logger.Error(err, "Failed to notify the master", "failures", failures)
				arm(p.retry(time.Now().Add(w.backoff(failures))))
				continue
			}
			metrics.WatcherNotifications.WithLabelValues(string(reason), "success").Inc()
			logger.V(2).Info("Notified the master", "reason", reason, "digest", v.Digest, "entries", v.Entries)
			last, failures, reason = v.Digest, 0, v1alpha1.ReasonResync
		}
	}
}

func (w *watcher) backoff(n int) time.Duration {
	d := w.opts.RetryBase
	for i := 1; i < n && d < w.opts.RetryMax; i++ {
		d *= 2
	}
	return min(d, w.opts.RetryMax)
}

// addWatches (re)adds an inotify watch on each class directory. A missing
// directory is retried at the next resync.
func (w *watcher) addWatches(ctx context.Context, fsw *fsnotify.Watcher) {
	watched := map[string]bool{}
	for _, p := range fsw.WatchList() {
		watched[p] = true
	}
	for _, c := range w.opts.Classes {
		if watched[c.MountDir] {
			continue
		}
		if err := fsw.Add(c.MountDir); err != nil {
			klog.FromContext(ctx).V(2).Info("Cannot watch class directory yet", "class", c.Name, "dir", c.MountDir, "err", err)
		}
	}
}

func (w *watcher) forwardEvents(ctx context.Context, fsw *fsnotify.Watcher, poke func()) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fsw.Events:
			if !ok {
				return
			}
			logger.V(5).Info("File system event", "event", ev.String())
			poke()
		case err, ok := <-fsw.Errors:
			if !ok {
				return
			}
			logger.Error(err, "Inotify error; rescanning")
			poke()
		}
	}
}
