package watcher

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
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
	// newDirWatcher makes the watcher of a class directory; tests replace it.
	newDirWatcher dirwatch.NewFunc
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
	return &watcher{opts: opts, scanner: scanner, notifier: notifier, newDirWatcher: dirwatch.New}
}

func (w *watcher) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	dirs, err := w.watchDirs(ctx)
	if err != nil {
		return err
	}
	files, mounts, resyncs := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	poke := func(ch chan struct{}) func() {
		return func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	go func() {
		if err := watchMounts(ctx, w.opts.MountInfoPath, poke(mounts)); err != nil {
			logger.Error(err, "Mount table watch stopped; relying on resync")
		}
	}()
	for _, dw := range dirs {
		go forwardEvents(ctx, dw, poke(files), poke(resyncs))
	}
	return w.loop(ctx, files, mounts, resyncs)
}

// watchDirs starts a directory watcher on each class directory. A missing
// directory is retried every resync period.
func (w *watcher) watchDirs(ctx context.Context) ([]dirwatch.Watcher, error) {
	seen := map[string]bool{}
	var out []dirwatch.Watcher
	for _, c := range w.opts.Classes {
		if seen[c.MountDir] {
			continue
		}
		seen[c.MountDir] = true
		// The class directory itself: volumes are its entries. A missing
		// one is retried every resync period.
		dw, err := w.newDirWatcher(c.MountDir, dirwatch.Options{MaxDepth: 0, RetryMin: w.opts.Resync, RetryMax: w.opts.Resync})
		if err != nil {
			return nil, fmt.Errorf("failed to watch class %s directory %s: %w", c.Name, c.MountDir, err)
		}
		_ = dw.Start(ctx) // a missing directory is its first event, and retried
		out = append(out, dw)
	}
	return out, nil
}

// loop turns signals into notifications, paced by a pacer, and recomputes
// the view from scratch each time. A failed notification is retried with
// backoff.
func (w *watcher) loop(ctx context.Context, files, mounts, resyncs <-chan struct{}) error {
	resync := time.NewTicker(w.opts.Resync)
	defer resync.Stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	p := &pacer{debounce: w.opts.Debounce}
	p.retry(time.Now())
	st := &lookState{reason: v1alpha1.ReasonStarted}
	// arm sets the timer to when the pacer says the next look is due.
	arm := func(due time.Time) { timer.Reset(time.Until(due)) }
	changed := func() {
		if st.reason != v1alpha1.ReasonStarted {
			st.reason = v1alpha1.ReasonChanged
		}
	}
	resynced := func() {
		if p.idle() && st.reason != v1alpha1.ReasonStarted {
			st.reason = v1alpha1.ReasonResync
		}
		arm(p.retry(time.Now()))
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
			resynced()
		case <-resyncs:
			resynced()
		case <-timer.C:
			p.running(time.Now())
			if retryIn, failed := w.look(ctx, st); failed {
				arm(p.retry(time.Now().Add(retryIn)))
			}
		}
	}
}

// lookState is what the loop remembers from one look to the next.
type lookState struct {
	reason   v1alpha1.NotificationReason
	last     string // the digest the master was told about
	failures int
}

// look recomputes the view and tells the master when it changed. When that
// fails, it returns true and when to look again.
func (w *watcher) look(ctx context.Context, st *lookState) (time.Duration, bool) {
	logger := klog.FromContext(ctx)
	v, err := ComputeView(w.scanner, w.opts.Classes, w.opts.MountInfoPath)
	if err != nil {
		st.failures++
		logger.Error(err, "Failed to compute view", "failures", st.failures)
		return w.backoff(st.failures), true
	}
	if v.Digest == st.last {
		return 0, false
	}
	if err := w.notifier.Notify(ctx, v, st.reason); err != nil {
		st.failures++
		metrics.WatcherNotifications.WithLabelValues(string(st.reason), "error").Inc()
		logger.Error(err, "Failed to notify the master", "failures", st.failures)
		return w.backoff(st.failures), true
	}
	metrics.WatcherNotifications.WithLabelValues(string(st.reason), "success").Inc()
	logger.V(2).Info("Notified the master", "reason", st.reason, "digest", v.Digest, "entries", v.Entries)
	st.last, st.failures, st.reason = v.Digest, 0, v1alpha1.ReasonResync
	return 0, false
}

func (w *watcher) backoff(n int) time.Duration {
	d := w.opts.RetryBase
	for i := 1; i < n && d < w.opts.RetryMax; i++ {
		d *= 2
	}
	return min(d, w.opts.RetryMax)
}

// forwardEvents turns a class directory's events into signals: a change
// (including lost events) is a file event; the directory becoming watchable
// again is a resync, as it was found by retrying.
func forwardEvents(ctx context.Context, dw dirwatch.Watcher, file, resync func()) {
	logger := klog.FromContext(ctx)
	for ev := range dw.Events() {
		switch {
		case ev.Op == dirwatch.RootUnavailable:
			logger.V(2).Info("Cannot watch class directory yet", "dir", ev.Path, "err", ev.Err)
		case ev.Op == dirwatch.Rescan && ev.Reason == dirwatch.ReasonStarted:
			// The first look, due at start, covers it.
		case ev.Op == dirwatch.Rescan && ev.Reason == dirwatch.ReasonRootRecovered:
			resync()
		case ev.Op == dirwatch.Rescan:
			logger.Error(ev.Err, "Inotify events lost; rescanning", "dir", dw.Root(), "reason", ev.Reason)
			file()
		default:
			logger.V(5).Info("File system event", "path", ev.Path, "op", ev.Op.String())
			file()
		}
	}
}
