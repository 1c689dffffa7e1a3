package watch

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// rootRetryInterval is how often a plugin directory that cannot be
// re-created or watched, or a subdirectory that cannot be watched, is
// retried.
const rootRetryInterval = time.Second

// socketWatcher is the Watcher: it populates the desired state from
// dirwatch's events on root, recording every unix socket below it. It
// never contacts plugins; it only calls enqueue for paths whose state
// changed. The watching itself (watches on new directories, the directory
// re-created, overflows) is dirwatch's.
type socketWatcher struct {
	root    string
	dsw     cache.DesiredStateOfWorld
	enqueue func(path string)
	rep     report.Reporter
	metrics *metrics.Metrics
	dw      dirwatch.Watcher
	stop    context.CancelFunc
	// newDirWatcher makes the directory watcher; tests replace it.
	newDirWatcher dirwatch.NewFunc
}

var _ Watcher = &socketWatcher{}

// watchMetrics counts directories that cannot be watched in
// watch_errors_total.
type watchMetrics struct {
	dirwatch.NoMetrics
	m *metrics.Metrics
}

func (w watchMetrics) WatchFailed(string, error) { w.m.WatchErrors.Inc() }

// Start creates root, watches it and performs the initial scan, which
// re-discovers every socket left by a previous kubelet (restart recovery).
func (w *socketWatcher) Start(ctx context.Context) error {
	dw, err := w.newDirWatcher(w.root, dirwatch.Options{
		MaxDepth:       dirwatch.Unlimited,
		Ignore:         ignoredBase,
		CreateRoot:     true,
		RootPerm:       defaultDirPermissions,
		ReportExisting: true, // sockets in a directory renamed in
		RetryMin:       rootRetryInterval,
		RetryMax:       rootRetryInterval,
		Metrics:        watchMetrics{m: w.metrics},
	})
	if err != nil {
		return err
	}
	dctx, cancel := context.WithCancel(ctx)
	if err := dw.Start(dctx); err != nil {
		cancel() // dirwatch would retry until its context ends
		return fmt.Errorf("watching plugin directory %s: %w", w.root, err)
	}
	w.dw, w.stop = dw, cancel
	w.rescan(ctx)
	return nil
}

// Run handles the directory watcher's events until ctx ends.
func (w *socketWatcher) Run(ctx context.Context) {
	defer w.stop()
	for ev := range w.dw.Events() {
		w.handle(ctx, ev)
	}
}

func (w *socketWatcher) handle(ctx context.Context, ev dirwatch.Event) {
	switch {
	case ev.Op == dirwatch.Rescan:
		w.handleRescan(ctx, ev)
	case ev.Op == dirwatch.Unwatchable:
		w.rep.Warn("Skipping plugin directory that cannot be watched", ev.Path, report.EventPluginDirUnwatchable, ev.Err, "path", ev.Path)
	case ev.Op == dirwatch.RootUnavailable:
		w.rep.Debug("Plugin directory unavailable, retrying", "err", ev.Err, "retryIn", ev.RetryIn)
	case ev.Op.Gone() && ev.Path == w.root:
		// dirwatch re-creates it; a Rescan follows once it is watched.
		w.rep.Warn("Plugin directory removed, re-creating it", w.root, report.EventPluginDirUnwatchable, nil)
		w.forgetTree(w.root)
	default:
		w.rep.Debug("Plugin directory event", "path", ev.Path, "op", ev.Op.String())
		if ev.Op.Gone() {
			w.forgetTree(ev.Path)
		} else if ev.Op.Has(dirwatch.Create) {
			w.observe(ev.Path)
		}
	}
}

func (w *socketWatcher) handleRescan(ctx context.Context, ev dirwatch.Event) {
	switch ev.Reason {
	case dirwatch.ReasonStarted:
		return // start scanned
	case dirwatch.ReasonOverflow:
		w.rep.Warn("Plugin directory events overflowed, rescanning", w.root, "", fsnotify.ErrEventOverflow)
	case dirwatch.ReasonWatchError:
		w.rep.Warn("Plugin directory watch error", w.root, "", ev.Err)
		return
	}
	w.rescan(ctx)
}

// observe records path if it is a socket and enqueues it when it changed.
func (w *socketWatcher) observe(path string) bool {
	id, isSock, err := socket.Lstat(path)
	if err != nil || !isSock {
		if err == nil {
			w.rep.Debug("Ignoring non-socket file", "path", path)
		}
		return false
	}
	rel, err := filepath.Rel(w.root, path)
	if err != nil {
		return false
	}
	if w.dsw.Observe(path, filepath.ToSlash(rel), id) {
		w.enqueue(path)
	}
	return true
}

func (w *socketWatcher) forgetTree(path string) {
	for _, p := range w.dsw.ForgetTree(path) {
		w.enqueue(p)
	}
}

// rescan walks the whole tree, observes every socket and forgets sockets
// that are no longer there. It runs at start, after an event overflow and
// whenever dirwatch says events may have been lost (the directory
// re-created, a subdirectory watched again). Watching is dirwatch's: a
// directory that cannot be read is skipped here, and reported by dirwatch
// if it cannot be watched.
func (w *socketWatcher) rescan(ctx context.Context) {
	seen := map[string]bool{}
	_ = filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || (path != w.root && ignoredName(path)) {
			return skipEntry(d)
		}
		if d.Type()&fs.ModeSocket != 0 && w.observe(path) {
			seen[path] = true
		}
		return nil
	})
	if ctx.Err() != nil {
		return // an incomplete walk: forget nothing
	}
	for _, p := range w.dsw.Paths() {
		if !seen[p] && w.dsw.Forget(p) {
			w.enqueue(p)
		}
	}
}

func skipEntry(d fs.DirEntry) error {
	if d != nil && d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// ignoredName reports names starting with "." (temporary files, e.g. a
// socket bound under a dot-name and then renamed into place).
func ignoredName(path string) bool {
	return ignoredBase(filepath.Base(path))
}

func ignoredBase(name string) bool { return strings.HasPrefix(name, ".") }
