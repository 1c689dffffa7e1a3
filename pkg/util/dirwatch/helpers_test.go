package dirwatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2/ktesting"
)

// start starts a Watcher of root and returns it with its start error.
func start(t *testing.T, root string, opts Options) (Watcher, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w, w.Start(ctx)
}

// next waits, for at most 10 s, for an event that matches.
func next(t *testing.T, w Watcher, what string, match func(Event) bool) Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("events closed while waiting for %s", what)
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func isOp(op Op, path string) func(Event) bool {
	return func(ev Event) bool { return ev.Op.Has(op) && (path == "" || ev.Path == path) }
}

func isRescan(r Reason) func(Event) bool {
	return func(ev Event) bool { return ev.Op == Rescan && ev.Reason == r }
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func join(elem ...string) string { return filepath.Join(elem...) }

// counts implements Metrics.
type counts struct {
	overflows, watchErrors, watchFailed atomic.Int64
	available                           atomic.Int64 // 1 available, -1 not, 0 never said
}

func (c *counts) Overflowed()               { c.overflows.Add(1) }
func (c *counts) WatchError(error)          { c.watchErrors.Add(1) }
func (c *counts) WatchFailed(string, error) { c.watchFailed.Add(1) }
func (c *counts) RootAvailable(ok bool) {
	if ok {
		c.available.Store(1)
	} else {
		c.available.Store(-1)
	}
}

// injectFS wraps a real fsnotify watcher; it can drop events, inject
// errors and fail Add for chosen paths.
type injectFS struct {
	FSWatcher
	events chan fsnotify.Event
	errs   chan error
	drop   atomic.Bool
	mu     sync.Mutex
	fail   map[string]bool
}

func newInjectFS(t *testing.T) *injectFS {
	real, err := NewFSWatcher()
	if err != nil {
		t.Fatal(err)
	}
	f := &injectFS{FSWatcher: real, events: make(chan fsnotify.Event), errs: make(chan error), fail: map[string]bool{}}
	go func() {
		defer close(f.events)
		for ev := range real.Events() {
			if !f.drop.Load() {
				f.events <- ev
			}
		}
	}()
	go func() {
		for err := range real.Errors() {
			f.errs <- err
		}
	}()
	return f
}

func (f *injectFS) Events() <-chan fsnotify.Event { return f.events }
func (f *injectFS) Errors() <-chan error          { return f.errs }

func (f *injectFS) Add(path string) error {
	f.mu.Lock()
	fail := f.fail[path]
	f.mu.Unlock()
	if fail {
		return errors.New("no space left for watches")
	}
	return f.FSWatcher.Add(path)
}

func (f *injectFS) setFail(path string, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[path] = fail
}
