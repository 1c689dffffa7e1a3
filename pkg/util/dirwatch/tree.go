package dirwatch

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// onEvent handles one fsnotify event: new directories are watched before
// the event is delivered, forgotten ones unwatched.
func (w *watcher) onEvent(ctx context.Context, fev fsnotify.Event) {
	path := filepath.Clean(fev.Name)
	depth, ok := w.depth(path)
	if !ok || (depth > 0 && w.opts.Ignore(filepath.Base(path))) {
		return
	}
	op := opOf(fev.Op)
	if op == 0 {
		return
	}
	klog.FromContext(ctx).V(6).Info("Directory event", "path", path, "op", op.String())
	if depth == 0 && op.Gone() {
		w.rootLost(ctx)
		return
	}
	if op.Gone() {
		w.forget(path)
	}
	var found []string
	if op.Has(Create) && w.withinDepth(depth) {
		var cont bool
		if found, cont = w.created(ctx, path, depth); !cont {
			return
		}
	}
	if !w.emit(ctx, Event{Op: op, Path: path}) {
		return
	}
	for _, p := range found {
		if !w.emit(ctx, Event{Op: Create, Path: p}) {
			return
		}
	}
}

// created watches a new directory's tree. With ReportExisting it returns
// the entries found in it. It returns false once ctx ends.
func (w *watcher) created(ctx context.Context, path string, depth int) ([]string, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !w.isDir(path, fi) {
		return nil, true // not a directory, or already gone (its Remove follows)
	}
	k := &walk{w: w, emit: w.emit, report: w.opts.ReportExisting}
	if !k.dir(ctx, path, depth) {
		return nil, false
	}
	w.armRetry()
	return k.found, true
}

// isDir reports whether the entry at path is a directory to watch.
func (w *watcher) isDir(path string, fi fs.FileInfo) bool {
	if fi.IsDir() {
		return true
	}
	if fi.Mode()&fs.ModeSymlink == 0 || !w.opts.FollowSymlinks {
		return false
	}
	t, err := os.Stat(path)
	return err == nil && t.IsDir()
}

// depth returns the number of components of path below the root, and
// false when path is outside it.
func (w *watcher) depth(path string) (int, bool) {
	rel, err := filepath.Rel(w.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return 0, false
	}
	if rel == "." {
		return 0, true
	}
	return strings.Count(rel, string(filepath.Separator)) + 1, true
}

// withinDepth reports whether a directory at depth is watched.
func (w *watcher) withinDepth(depth int) bool {
	return w.opts.MaxDepth == Unlimited || depth <= w.opts.MaxDepth
}

// forget drops the watches of path and of every directory below it. The
// kernel drops those of removed directories by itself; a symlink's watch
// is on its target, which stays.
func (w *watcher) forget(path string) {
	prefix := path + string(filepath.Separator)
	w.mu.Lock()
	var gone []string
	for p := range w.watched {
		if p == path || strings.HasPrefix(p, prefix) {
			gone = append(gone, p)
			delete(w.watched, p)
		}
	}
	w.mu.Unlock()
	for _, p := range gone {
		_ = w.fsw.Remove(p)
	}
	for p := range w.failed {
		if p == path || strings.HasPrefix(p, prefix) {
			delete(w.failed, p)
		}
	}
}

// rewatchTree adds every watch of the tree again, after events may have
// been lost, and drops the watches of directories no longer there. It
// returns false once ctx ends.
func (w *watcher) rewatchTree(ctx context.Context) bool {
	old := w.snapshot()
	k := &walk{w: w, emit: w.emit, force: true, seen: map[string]bool{}}
	if !k.dir(ctx, w.root, 0) {
		return false
	}
	for path := range old {
		if !k.seen[path] {
			w.mu.Lock()
			delete(w.watched, path)
			w.mu.Unlock()
			_ = w.fsw.Remove(path)
		}
	}
	return true
}

func (w *watcher) snapshot() map[string]fs.FileInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.watched)
}

func (w *watcher) clearWatched() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.watched)
}

// walk is one walk of (part of) the tree that adds watches.
type walk struct {
	w      *watcher
	emit   emitFunc
	force  bool            // add watches again even where the bookkeeping has them
	report bool            // collect the entries found
	seen   map[string]bool // if not nil, collects the directories watched
	found  []string
	stack  []fs.FileInfo // the directories being walked, against link cycles
}

// dir watches the directory path, at depth below the root, and the
// directories below it within MaxDepth. It returns false once ctx ends.
func (k *walk) dir(ctx context.Context, path string, depth int) bool {
	fi, ok := k.watch(ctx, path)
	if ctx.Err() != nil {
		return false
	}
	if !ok || k.inCycle(fi) {
		return true
	}
	below := k.w.withinDepth(depth + 1)
	if !below && !k.report {
		return true
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return true // removed meanwhile (its event follows) or unreadable: its watch reports changes
	}
	k.stack = append(k.stack, fi)
	defer func() { k.stack = k.stack[:len(k.stack)-1] }()
	for _, e := range ents {
		if k.w.opts.Ignore(e.Name()) {
			continue
		}
		child := filepath.Join(path, e.Name())
		if k.report {
			k.found = append(k.found, child)
		}
		if !below || !(e.IsDir() || e.Type()&fs.ModeSymlink != 0) {
			continue
		}
		if cfi, err := os.Lstat(child); err != nil || !k.w.isDir(child, cfi) {
			continue
		}
		if !k.dir(ctx, child, depth+1) {
			return false
		}
	}
	return true
}

func (k *walk) inCycle(fi fs.FileInfo) bool {
	for _, a := range k.stack {
		if os.SameFile(a, fi) {
			return true
		}
	}
	return false
}

// watch adds the watch of the directory path, unless it has one on the
// same directory already. A failure is reported once per directory.
func (k *walk) watch(ctx context.Context, path string) (fs.FileInfo, bool) {
	w := k.w
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return nil, false
	}
	if k.seen != nil {
		k.seen[path] = true
	}
	w.mu.Lock()
	prev, had := w.watched[path]
	w.mu.Unlock()
	same := had && os.SameFile(prev, fi)
	if same && !k.force {
		return fi, true
	}
	if had && !same {
		_ = w.fsw.Remove(path) // a link pointed elsewhere
	}
	if err := w.fsw.Add(path); err != nil {
		w.mu.Lock()
		delete(w.watched, path)
		w.mu.Unlock()
		if !w.failed[path] {
			w.failed[path] = true
			w.opts.Metrics.WatchFailed(path, err)
			k.emit(ctx, Event{Op: Unwatchable, Path: path, Err: err})
		}
		return nil, false
	}
	delete(w.failed, path)
	w.mu.Lock()
	w.watched[path] = fi
	w.mu.Unlock()
	return fi, true
}
