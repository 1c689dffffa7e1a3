package dirwatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// watcher implements Watcher. Everything but mu's fields is owned by the
// goroutine that runs loop (by Start before it begins).
type watcher struct {
	root   string
	opts   Options
	events chan Event
	resync chan struct{}

	mu      sync.Mutex
	watched map[string]fs.FileInfo // directories with a watch, as they were then
	started bool

	fsw     FSWatcher
	ready   bool            // the root is watched
	failed  map[string]bool // directories whose watch failed, reported once
	pending []Event         // events of Start, delivered first
	retry   clock.Timer
	retryOn bool
	back    Backoff
}

var _ Watcher = &watcher{}

func newWatcher(root string, opts Options) *watcher {
	t := opts.Clock.NewTimer(opts.RetryMin)
	t.Stop()
	return &watcher{
		root: root, opts: opts,
		events:  make(chan Event, opts.Buffer),
		resync:  make(chan struct{}, 1),
		watched: map[string]fs.FileInfo{},
		failed:  map[string]bool{},
		retry:   t,
		back:    Backoff{Min: opts.RetryMin, Max: opts.RetryMax},
	}
}

func (w *watcher) Root() string         { return w.root }
func (w *watcher) Events() <-chan Event { return w.events }

func (w *watcher) Resync() {
	select {
	case w.resync <- struct{}{}:
	default:
	}
}

func (w *watcher) Watching(path string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.watched[path]
	return ok
}

func (w *watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("dirwatch: watcher already started")
	}
	w.started = true
	w.mu.Unlock()
	err := w.recover(ctx, ReasonStarted, w.queue)
	go w.loop(ctx)
	return err
}

// queue collects the events of Start, before anyone reads Events.
func (w *watcher) queue(_ context.Context, ev Event) bool {
	w.pending = append(w.pending, ev)
	return true
}

// emit delivers ev, waiting for the caller. It returns false once ctx ends.
func (w *watcher) emit(ctx context.Context, ev Event) bool {
	select {
	case w.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

type emitFunc func(context.Context, Event) bool

func (w *watcher) loop(ctx context.Context) {
	defer close(w.events)
	defer w.closeFS()
	for _, ev := range w.pending {
		if !w.emit(ctx, ev) {
			return
		}
	}
	w.pending = nil
	for ctx.Err() == nil {
		var evC <-chan fsnotify.Event
		var errC <-chan error
		if w.fsw != nil {
			evC, errC = w.fsw.Events(), w.fsw.Errors()
		}
		var retryC <-chan time.Time
		if w.retryOn {
			retryC = w.retry.C()
		}
		select {
		case <-ctx.Done():
		case ev, ok := <-evC:
			if !ok {
				w.restart(ctx, errors.New("fsnotify event channel closed"))
				continue
			}
			w.onEvent(ctx, ev)
		case err, ok := <-errC:
			if !ok {
				w.restart(ctx, errors.New("fsnotify error channel closed"))
				continue
			}
			w.onError(ctx, err)
		case <-w.resync:
			w.rescan(ctx, Event{Op: Rescan, Reason: ReasonRequested})
		case <-retryC:
			w.retryOn = false
			w.onRetry(ctx)
		}
	}
}

// onError handles an fsnotify error: any error may mean lost events.
func (w *watcher) onError(ctx context.Context, err error) {
	ev := Event{Op: Rescan, Reason: ReasonWatchError, Err: err}
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.opts.Metrics.Overflowed()
		ev = Event{Op: Rescan, Reason: ReasonOverflow}
	} else {
		w.opts.Metrics.WatchError(err)
	}
	klog.FromContext(ctx).V(4).Info("Directory watch error, rescanning", "root", w.root, "err", err)
	w.rescan(ctx, ev)
}

// rescan adds every watch again and delivers ev, a Rescan. A root that is
// gone is handled as such.
func (w *watcher) rescan(ctx context.Context, ev Event) {
	if !w.ready {
		w.recover(ctx, ReasonRootRecovered, w.emit)
		return
	}
	if fi, err := os.Stat(w.root); err != nil || !fi.IsDir() {
		w.rootLost(ctx)
		return
	}
	if !w.rewatchTree(ctx) {
		return
	}
	w.armRetry()
	w.emit(ctx, ev)
}

// onRetry retries the root, or the directories that could not be watched.
func (w *watcher) onRetry(ctx context.Context) {
	if !w.ready {
		w.recover(ctx, ReasonRootRecovered, w.emit)
		return
	}
	recovered := false
	for path := range w.failed {
		depth, _ := w.depth(path)
		k := &walk{w: w, emit: w.emit}
		if !k.dir(ctx, path, depth) {
			return
		}
		if w.Watching(path) {
			recovered = true
		} else if _, err := os.Lstat(path); err != nil {
			delete(w.failed, path) // gone: nothing to retry
		}
	}
	w.armRetry()
	if recovered {
		w.emit(ctx, Event{Op: Rescan, Reason: ReasonWatchRecovered})
	}
}

// armRetry schedules a retry while directories could not be watched.
func (w *watcher) armRetry() {
	if len(w.failed) == 0 {
		w.back.Reset()
		return
	}
	if !w.retryOn {
		w.retry.Reset(w.back.Next())
		w.retryOn = true
	}
}

// recover (re)creates the fsnotify watcher and the root's watch, walks the
// tree and delivers a Rescan; on failure a RootUnavailable, and a retry is
// scheduled. It returns the failure.
func (w *watcher) recover(ctx context.Context, reason Reason, emit emitFunc) error {
	if err := w.watchRoot(); err != nil {
		delay := w.back.Next()
		w.opts.Metrics.RootAvailable(false)
		w.retry.Reset(delay)
		w.retryOn = true
		emit(ctx, Event{Op: RootUnavailable, Path: w.root, Err: err, RetryIn: delay})
		return err
	}
	w.ready = true
	w.back.Reset()
	w.retry.Stop()
	w.retryOn = false
	w.opts.Metrics.RootAvailable(true)
	klog.FromContext(ctx).V(4).Info("Watching directory", "root", w.root, "reason", reason)
	k := &walk{w: w, emit: emit}
	if k.dir(ctx, w.root, 0) {
		w.armRetry()
		emit(ctx, Event{Op: Rescan, Reason: reason})
	}
	return nil
}

func (w *watcher) watchRoot() error {
	if w.fsw == nil {
		fsw, err := w.opts.NewFSWatcher()
		if err != nil {
			return fmt.Errorf("failed to create a file system watcher: %w", err)
		}
		w.fsw = fsw
	}
	if w.opts.CreateRoot {
		if err := os.MkdirAll(w.root, w.opts.RootPerm); err != nil {
			return fmt.Errorf("failed to create %s: %w", w.root, err)
		}
	}
	if err := w.fsw.Add(w.root); err != nil {
		return fmt.Errorf("failed to watch %s: %w", w.root, err)
	}
	return nil
}

// rootLost handles the removal of the root: every watch went with it.
func (w *watcher) rootLost(ctx context.Context) {
	klog.FromContext(ctx).V(2).Info("Watched directory removed", "root", w.root)
	w.ready = false
	for path := range w.snapshot() {
		_ = w.fsw.Remove(path)
	}
	w.clearWatched()
	clear(w.failed)
	if !w.emit(ctx, Event{Op: Remove, Path: w.root}) {
		return
	}
	w.recover(ctx, ReasonRootRecovered, w.emit)
}

// restart replaces an fsnotify watcher that stopped working.
func (w *watcher) restart(ctx context.Context, err error) {
	klog.FromContext(ctx).Error(err, "Directory watcher stopped, restarting it", "root", w.root)
	w.closeFS()
	w.ready = false
	w.clearWatched()
	clear(w.failed)
	w.recover(ctx, ReasonRestarted, w.emit)
}

func (w *watcher) closeFS() {
	if w.fsw != nil {
		_ = w.fsw.Close()
		w.fsw = nil
	}
}
