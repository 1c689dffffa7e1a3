package watch

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
)

// queued records the paths the watcher queues.
type queued struct {
	mu    sync.Mutex
	paths []string
}

func (q *queued) add(path string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.paths = append(q.paths, path)
}

func (q *queued) has(path string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Contains(q.paths, path)
}

// TestSocketsPopulateDesiredState: sockets present at start and sockets
// created later, also in a new subdirectory, are recorded and queued;
// other files and dot-names are not; a removed socket is forgotten.
func TestSocketsPopulateDesiredState(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "pww")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	early := listen(t, filepath.Join(dir, "early.sock"))
	if err := os.WriteFile(filepath.Join(dir, "file.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	rep := report.New(report.Config{Interval: time.Hour, Budget: 10})
	rep.SetLogger(logger)
	dsw := cache.NewDesiredStateOfWorld(nil)
	q := &queued{}
	w := New(dir, dsw, q.add, rep, metrics.New())
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	late := listen(t, filepath.Join(dir, "sub", "late.sock"))
	hidden := listen(t, filepath.Join(dir, ".hidden.sock"))
	known := func(path string) bool { _, ok := dsw.Get(path); return ok }
	waitFor(t, "both sockets recorded and queued", func() bool {
		return known(early) && known(late) && q.has(early) && q.has(late)
	})
	if paths := dsw.Paths(); len(paths) != 2 || known(hidden) {
		t.Errorf("desired state %v, want only %s and %s", paths, early, late)
	}
	if err := os.Remove(early); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "removed socket forgotten", func() bool { return !known(early) })
}

// listen creates a listening unix socket at path (and its directory).
func listen(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	return path
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for: %s", what)
	}
}
