package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

const rootRetryInterval = time.Second

// fsWatcher populates the desired state: it keeps a recursive fsnotify
// watch on root and records every unix socket below it. It never contacts
// plugins; it only calls enqueue for paths whose state changed.
type fsWatcher struct {
	root    string
	dsw     cache.DesiredStateOfWorld
	enqueue func(path string)
	rep     report.Reporter
	metrics *metrics.Metrics
	fsn     *fsnotify.Watcher
	// addWatch adds one directory to fsn. Tests replace it to inject a
	// failure from the real fsnotify.
	addWatch func(dir string) error
}

func newFSWatcher(root string, dsw cache.DesiredStateOfWorld, enqueue func(string), rep report.Reporter, m *metrics.Metrics) *fsWatcher {
	return &fsWatcher{root: root, dsw: dsw, enqueue: enqueue, rep: rep, metrics: m}
}

// start creates root, watches it and performs the initial scan, which
// re-discovers every socket left by a previous kubelet (restart recovery).
func (w *fsWatcher) start(ctx context.Context) error {
	if err := os.MkdirAll(w.root, defaultDirPermissions); err != nil {
		return fmt.Errorf("creating plugin directory %s: %w", w.root, err)
	}
	fsn, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("creating fsnotify watcher: %w", err)
	}
	w.fsn = fsn
	if w.addWatch == nil {
		w.addWatch = fsn.Add
	}
	if err := w.addWatch(w.root); err != nil {
		_ = fsn.Close()
		return fmt.Errorf("watching plugin directory %s: %w", w.root, err)
	}
	w.rescan(ctx)
	return nil
}

// run handles fsnotify events until ctx ends.
func (w *fsWatcher) run(ctx context.Context) {
	defer func() { _ = w.fsn.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fsn.Events:
			if !ok {
				return
			}
			w.handle(ctx, ev)
		case err, ok := <-w.fsn.Errors:
			if !ok {
				return
			}
			w.handleError(ctx, err)
		}
	}
}

func (w *fsWatcher) handle(ctx context.Context, ev fsnotify.Event) {
	if ignoredName(ev.Name) && ev.Name != w.root {
		return
	}
	w.rep.Debug("Plugin directory event", "event", ev.String())
	switch {
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		if ev.Name == w.root {
			w.rootGone(ctx)
			return
		}
		w.forgetTree(ev.Name)
	case ev.Has(fsnotify.Create):
		w.created(ctx, ev.Name)
	}
}

func (w *fsWatcher) handleError(ctx context.Context, err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.rep.Warn("Plugin directory events overflowed, rescanning", w.root, "", err)
		w.rescan(ctx)
		return
	}
	w.rep.Warn("Plugin directory watch error", w.root, "", err)
}

// created handles a new entry: a directory is watched and walked (it may
// already contain sockets), a socket is observed, anything else ignored.
func (w *fsWatcher) created(ctx context.Context, path string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return // already gone; its Remove event follows
	}
	if fi.IsDir() {
		w.walk(ctx, path, nil)
		return
	}
	w.observe(path)
}

// observe records path if it is a socket and enqueues it when it changed.
func (w *fsWatcher) observe(path string) bool {
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

func (w *fsWatcher) forgetTree(path string) {
	for _, p := range w.dsw.ForgetTree(path) {
		w.enqueue(p)
	}
	prefix := path + string(filepath.Separator)
	for _, watched := range w.fsn.WatchList() {
		if watched == path || strings.HasPrefix(watched, prefix) {
			_ = w.fsn.Remove(watched)
		}
	}
}

// walk watches dir and every directory below it and observes every socket.
// A directory that cannot be watched or read is reported and skipped; the
// walk continues with its siblings. seen, if not nil, collects sockets.
func (w *fsWatcher) walk(ctx context.Context, dir string, seen map[string]bool) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if path != dir && ignoredName(path) {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err != nil {
			w.unwatchable(path, err)
			return skipEntry(d)
		}
		if d.IsDir() {
			if err := w.addWatch(path); err != nil {
				w.unwatchable(path, err)
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSocket != 0 && w.observe(path) && seen != nil {
			seen[path] = true
		}
		return nil
	})
}

func skipEntry(d fs.DirEntry) error {
	if d != nil && d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

func (w *fsWatcher) unwatchable(path string, err error) {
	w.metrics.WatchErrors.Inc()
	w.rep.Warn("Skipping plugin directory that cannot be watched", path, report.EventPluginDirUnwatchable, err, "path", path)
}

// rescan walks the whole tree and forgets sockets that are no longer there.
// It runs at start and after an event overflow.
func (w *fsWatcher) rescan(ctx context.Context) {
	seen := map[string]bool{}
	w.walk(ctx, w.root, seen)
	for _, p := range w.dsw.Paths() {
		if !seen[p] && w.dsw.Forget(p) {
			w.enqueue(p)
		}
	}
}

// rootGone forgets everything and re-creates the directory in the
// background, because plugins may come back.
func (w *fsWatcher) rootGone(ctx context.Context) {
	w.rep.Warn("Plugin directory removed, re-creating it", w.root, report.EventPluginDirUnwatchable, nil)
	w.forgetTree(w.root)
	go func() {
		t := time.NewTicker(rootRetryInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if os.MkdirAll(w.root, defaultDirPermissions) == nil && w.addWatch(w.root) == nil {
				w.rescan(ctx)
				return
			}
		}
	}()
}

// ignoredName reports names starting with "." (temporary files, e.g. a
// socket bound under a dot-name and then renamed into place).
func ignoredName(path string) bool {
	return strings.HasPrefix(filepath.Base(path), ".")
}
