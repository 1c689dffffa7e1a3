package watch

import (
	"context"
	"fmt"
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
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch/dirwatchtest"
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
	dir := tempDir(t)
	early := listen(t, filepath.Join(dir, "early.sock"))
	if err := os.WriteFile(filepath.Join(dir, "file.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	dsw, q := startWatch(t, dir, nil)
	late := listen(t, filepath.Join(dir, "sub", "late.sock"))
	hidden := listen(t, filepath.Join(dir, ".hidden.sock"))
	known := knownIn(dsw)
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

// TestDirectoryRenamedIn: sockets inside a directory renamed into the tree
// are recorded.
func TestDirectoryRenamedIn(t *testing.T) {
	dir := tempDir(t)
	outside := tempDir(t)
	listen(t, filepath.Join(outside, "x", "deep", "a.sock"))
	dsw, _ := startWatch(t, dir, nil)

	if err := os.Rename(filepath.Join(outside, "x"), filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "x", "deep", "a.sock")
	waitFor(t, "socket in the renamed directory recorded", func() bool { return knownIn(dsw)(moved) })
}

// TestRootRemoved: when the plugin directory is removed, its sockets are
// forgotten, the directory is re-created and new sockets in it are
// recorded.
func TestRootRemoved(t *testing.T) {
	dir := tempDir(t)
	old := filepath.Join(dir, "old.sock")
	lis, err := net.Listen("unix", old)
	if err != nil {
		t.Fatal(err)
	}
	dsw, q := startWatch(t, dir, nil)
	known := knownIn(dsw)
	if !known(old) {
		t.Fatalf("%s not recorded at start", old)
	}

	// A socket still bound in it pins the directory: the kernel reports
	// the directory deleted only when the last one is closed.
	_ = lis.Close()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "socket forgotten", func() bool { return !known(old) })
	waitFor(t, "directory re-created", func() bool { fi, err := os.Stat(dir); return err == nil && fi.IsDir() })
	// The directory may be re-created before it is watched again: create
	// sockets until one is recorded.
	var late string
	waitFor(t, "socket in the re-created directory recorded", func() bool {
		if late == "" || !known(late) {
			late = listen(t, filepath.Join(dir, fmt.Sprintf("new.%d.sock", time.Now().UnixNano())))
		}
		return known(late) && q.has(late)
	})
}

// TestRescanReasons: a Rescan that says events may have been lost makes
// the watcher read the whole tree: sockets whose events were lost are
// recorded, removed ones forgotten. The first Rescan (start scanned) and
// a watch error (dirwatch follows it with what it lost) do not.
func TestRescanReasons(t *testing.T) {
	tests := []struct {
		name       string
		reason     dirwatch.Reason
		wantRescan bool
	}{
		{name: "overflow", reason: dirwatch.ReasonOverflow, wantRescan: true},
		{name: "root recovered", reason: dirwatch.ReasonRootRecovered, wantRescan: true},
		{name: "watch recovered", reason: dirwatch.ReasonWatchRecovered, wantRescan: true},
		{name: "restarted", reason: dirwatch.ReasonRestarted, wantRescan: true},
		{name: "requested", reason: dirwatch.ReasonRequested, wantRescan: true},
		{name: "started", reason: dirwatch.ReasonStarted},
		{name: "watch error", reason: dirwatch.ReasonWatchError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tempDir(t)
			gone := listen(t, filepath.Join(dir, "gone.sock"))
			fake := dirwatchtest.NewFake(dir, nil)
			dsw, _ := startWatch(t, dir, fake.New)
			t.Cleanup(fake.Close) // before startWatch's cleanup waits for Run
			known := knownIn(dsw)
			if !known(gone) {
				t.Fatalf("%s not recorded at start", gone)
			}

			// Changes the watcher hears nothing of.
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
			lost := listen(t, filepath.Join(dir, "sub", "lost.sock"))
			fake.Send(t.Context(), dirwatch.Event{Op: dirwatch.Rescan, Reason: tc.reason})
			// Run handles one event at a time: once this one is taken,
			// the Rescan is done.
			fake.Send(t.Context(), dirwatch.Event{Op: dirwatch.Chmod, Path: dir})
			if got := known(lost) && !known(gone); got != tc.wantRescan {
				t.Errorf("rescanned = %v, want %v (desired state %v)", got, tc.wantRescan, dsw.Paths())
			}
		})
	}
}

// startWatch starts a watcher of dir (on newDirWatcher, if not nil) and
// runs it until the test ends.
func startWatch(t *testing.T, dir string, newDirWatcher dirwatch.NewFunc) (cache.DesiredStateOfWorld, *queued) {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	rep := report.New(report.Config{Interval: time.Hour, Budget: 10})
	rep.SetLogger(logger)
	dsw := cache.NewDesiredStateOfWorld(nil)
	q := &queued{}
	w := New(dir, dsw, q.add, rep, metrics.New(), newDirWatcher)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return dsw, q
}

func knownIn(dsw cache.DesiredStateOfWorld) func(path string) bool {
	return func(path string) bool { _, ok := dsw.Get(path); return ok }
}

// tempDir returns a short new directory (socket paths are limited to
// about 108 bytes).
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pww")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
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
