package prober

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch/dirwatchtest"
)

// injectOptions returns test options whose watcher is a real fsnotify
// watcher that can drop events and inject errors.
func injectOptions(t *testing.T) (Options, *dirwatchtest.InjectFS) {
	t.Helper()
	w, err := dirwatchtest.NewInjectFS()
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(&sink{})
	opts.newDirWatcher = w.New
	return opts, w
}

func TestOverflowInjected(t *testing.T) {
	root := t.TempDir()
	opts, w := injectOptions(t)
	p := newTestProber(t, root, opts)
	// Events lost: the driver appears on disk unnoticed...
	w.Drop(true)
	install(t, root, "example.com~lost", "lost", script(capsNoAttach))
	// ...until the watcher reports an overflow, which forces a rescan.
	w.Inject(fsnotify.ErrEventOverflow)
	waitFor(t, p, "rescan after overflow", ready("example.com/lost", false))
	if p.Stats().Overflows != 1 {
		t.Errorf("overflows = %d, want 1", p.Stats().Overflows)
	}
}

// TestOverflowReal overflows the kernel's inotify queue for real: the event
// loop is held while far more events than fs.inotify.max_queued_events are
// generated, then a driver is installed, whose event the kernel drops.
func TestOverflowReal(t *testing.T) {
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		fmt.Sscan(strings.TrimSpace(string(b)), &limit)
	}
	if limit > 200000 {
		t.Skipf("max_queued_events is %d; too many files to create", limit)
	}
	root := t.TempDir()
	hold := make(chan struct{})
	var once sync.Once
	held := make(chan struct{})
	opts := testOptions(&sink{})
	opts.eventHook = func(dirwatch.Event) {
		once.Do(func() { close(held); <-hold })
	}
	p := newTestProber(t, root, opts)
	flood := filepath.Join(root, ".flood")
	if err := os.Mkdir(flood, 0o755); err != nil { // the first event: the loop holds here
		t.Fatal(err)
	}
	<-held
	for i := 0; i < limit+limit/2+8192; i++ {
		f, err := os.Create(filepath.Join(root, fmt.Sprintf(".n%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	install(t, root, "example.com~late", "late", script(capsNoAttach))
	close(hold)
	// Every queued event is for a dotfile; only the overflow's rescan can
	// find the driver.
	waitFor(t, p, "driver installed during the overflow", ready("example.com/late", false))
	pollUntil(t, "overflow counted", func() bool { return p.Stats().Overflows > 0 })
}

func TestPluginDirRemoved(t *testing.T) {
	root := filepath.Join(t.TempDir(), "plugins")
	s := &sink{}
	p := newTestProber(t, root, testOptions(s))
	install(t, root, "example.com~nfs", "nfs", script(capsNoAttach))
	waitFor(t, p, "install", ready("example.com/nfs", false))
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, "removal", absent("example.com/nfs"))
	pollUntil(t, "plugin directory recreated", func() bool {
		fi, err := os.Stat(root)
		return err == nil && fi.IsDir()
	})
	// The new directory is watched: a new install is seen.
	install(t, root, "example.com~again", "again", script(capsAttach))
	waitFor(t, p, "install after recreation", ready("example.com/again", true))
}

func TestPluginDirUnwritableAtStart(t *testing.T) {
	// Tests run as root, which ignores directory permissions: a file where
	// the parent directory should be makes MkdirAll fail the same way a
	// read-only /usr/libexec does.
	parent := filepath.Join(t.TempDir(), "libexec")
	if err := os.WriteFile(parent, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(parent, "volume", "exec")
	s := &sink{}
	p := newTestProber(t, root, testOptions(s))
	snap := p.Snapshot()
	waitFor(t, p, "problem reported", func(s *Snapshot) bool { return s.Problems[problemPluginDir] != "" })
	if s.count(ReasonPluginDirUnavailable, "") != 1 {
		t.Errorf("want one %s event, got %+v (%s)", ReasonPluginDirUnavailable, s.events, describe(snap))
	}
	// The directory becomes creatable: the prober recovers by itself.
	if err := os.Remove(parent); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, "problem cleared", func(s *Snapshot) bool { return s.Problems[problemPluginDir] == "" })
	install(t, root, "example.com~nfs", "nfs", script(capsNoAttach))
	waitFor(t, p, "install", ready("example.com/nfs", false))
	if n := s.count(ReasonPluginDirUnavailable, ""); n != 1 {
		t.Errorf("retries reported %d times, want once", n)
	}
}

func TestSymlinkedDriverDir(t *testing.T) {
	root := t.TempDir()
	store := t.TempDir()
	install(t, store, "v1", "nfs", script(capsAttach))
	install(t, store, "v2", "nfs", script(capsNoAttach))
	// A symlinked driver directory present at start is loaded...
	if err := os.Symlink(filepath.Join(store, "v1"), filepath.Join(root, "example.com~nfs")); err != nil {
		t.Fatal(err)
	}
	p := newTestProber(t, root, testOptions(&sink{}))
	waitFor(t, p, "symlink at start", ready("example.com/nfs", true))
	// ...and one created later the same way.
	if err := os.Symlink(filepath.Join(store, "v2"), filepath.Join(root, "example.com~other")); err != nil {
		t.Fatal(err)
	}
	install(t, store, "v2", "other", script(capsNoAttach))
	waitFor(t, p, "symlink created later", ready("example.com/other", false))
	// Changes inside the link's target are seen through the link.
	install(t, store, "v1", "nfs", script(capsNoAttach))
	waitFor(t, p, "update in the target", ready("example.com/nfs", false))
	// Pointing the link elsewhere (atomically, as ln -sfn does) is seen, and
	// the new target is watched.
	tmp := filepath.Join(root, ".link")
	if err := os.Symlink(filepath.Join(store, "v3"), tmp); err != nil {
		t.Fatal(err)
	}
	install(t, store, "v3", "nfs", script(capsAttach))
	if err := os.Rename(tmp, filepath.Join(root, "example.com~nfs")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, "retargeted link", ready("example.com/nfs", true))
	install(t, store, "v3", "nfs", script(capsNoAttach))
	waitFor(t, p, "update in the new target", ready("example.com/nfs", false))
	if err := os.Remove(filepath.Join(store, "v3", "nfs")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, "removal in the new target", absent("example.com/nfs"))
}

func TestWatcherErrorIsNotFatal(t *testing.T) {
	root := t.TempDir()
	opts, w := injectOptions(t)
	p := newTestProber(t, root, opts)
	w.Inject(errors.New("some watch error"))
	install(t, root, "example.com~nfs", "nfs", script(capsNoAttach))
	waitFor(t, p, "install after an error", ready("example.com/nfs", false))
}

// TestDirEventsFromFake drives the populator with a fake directory
// watcher, so that only the events it is sent exist: the first Rescan
// scans, a RootUnavailable is a plugin directory problem, and the Rescan
// of the directory recovered clears it and scans everything again.
func TestDirEventsFromFake(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~a", "a", script(capsNoAttach))
	fake := dirwatchtest.NewFake(root, nil)
	opts := testOptions(&sink{})
	opts.newDirWatcher = fake.New
	go fake.Send(t.Context(), dirwatch.Event{Op: dirwatch.Rescan, Reason: dirwatch.ReasonStarted})
	p := newTestProber(t, root, opts)
	waitFor(t, p, "driver present at start", ready("example.com/a", false))
	if o := fake.Options(); o.MaxDepth != 1 || !o.FollowSymlinks || !o.CreateRoot {
		t.Errorf("watcher options %+v, want MaxDepth 1, FollowSymlinks and CreateRoot", o)
	}

	steps := []struct {
		name string
		ev   dirwatch.Event
		// install is a driver directory installed before ev is sent,
		// unseen but for ev.
		install string
		want    func(*Snapshot) bool
	}{
		{
			name: "root unavailable",
			ev:   dirwatch.Event{Op: dirwatch.RootUnavailable, Path: root, Err: errors.New("injected"), RetryIn: time.Second},
			want: func(s *Snapshot) bool { return s.Problems[problemPluginDir] != "" },
		},
		{
			name:    "root recovered",
			ev:      dirwatch.Event{Op: dirwatch.Rescan, Reason: dirwatch.ReasonRootRecovered},
			install: "b",
			want: func(s *Snapshot) bool {
				return s.Problems[problemPluginDir] == "" && ready("example.com/b", false)(s)
			},
		},
		{
			name:    "overflow",
			ev:      dirwatch.Event{Op: dirwatch.Rescan, Reason: dirwatch.ReasonOverflow},
			install: "c",
			want:    ready("example.com/c", false),
		},
	}
	for _, st := range steps {
		if st.install != "" {
			install(t, root, "example.com~"+st.install, st.install, script(capsNoAttach))
		}
		fake.Send(t.Context(), st.ev)
		waitFor(t, p, st.name, st.want)
	}
}
