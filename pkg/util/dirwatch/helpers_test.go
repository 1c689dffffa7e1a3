package dirwatch_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch/dirwatchtest"
)

// newInjectFS returns a dirwatchtest.InjectFS.
func newInjectFS(t *testing.T) *dirwatchtest.InjectFS {
	t.Helper()
	f, err := dirwatchtest.NewInjectFS()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// start starts a dirwatch.Watcher of root and returns it with its start error.
func start(t *testing.T, root string, opts dirwatch.Options) (dirwatch.Watcher, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w, err := dirwatch.New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w, w.Start(ctx)
}

// next waits, for at most 10 s, for an event that matches.
func next(t *testing.T, w dirwatch.Watcher, what string, match func(dirwatch.Event) bool) dirwatch.Event {
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

func isOp(op dirwatch.Op, path string) func(dirwatch.Event) bool {
	return func(ev dirwatch.Event) bool { return ev.Op.Has(op) && (path == "" || ev.Path == path) }
}

func isRescan(r dirwatch.Reason) func(dirwatch.Event) bool {
	return func(ev dirwatch.Event) bool { return ev.Op == dirwatch.Rescan && ev.Reason == r }
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

// counts implements dirwatch.Metrics.
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
