package dirwatch_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

func TestNewDirectoriesAreWatchedBeforeTheyAreReported(t *testing.T) {
	tests := []struct {
		name     string
		maxDepth int
		// deepSeen: a file two levels below a new directory is reported.
		deepSeen bool
	}{
		{name: "unlimited depth", maxDepth: dirwatch.Unlimited, deepSeen: true},
		{name: "one level", maxDepth: 1, deepSeen: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			w, err := start(t, root, dirwatch.Options{MaxDepth: tc.maxDepth})
			if err != nil {
				t.Fatal(err)
			}
			next(t, w, "start", isRescan(dirwatch.ReasonStarted))
			mkdir(t, join(root, "a"))
			next(t, w, "create a", isOp(dirwatch.Create, join(root, "a")))
			if !w.Watching(join(root, "a")) {
				t.Fatal("a reported before it is watched")
			}
			touch(t, join(root, "a", "f"))
			next(t, w, "create a/f", isOp(dirwatch.Create, join(root, "a", "f")))
			mkdir(t, join(root, "a", "b"))
			next(t, w, "create a/b", isOp(dirwatch.Create, join(root, "a", "b")))
			if got := w.Watching(join(root, "a", "b")); got != tc.deepSeen {
				t.Fatalf("a/b watched = %t, want %t", got, tc.deepSeen)
			}
			touch(t, join(root, "a", "b", "g"))
			touch(t, join(root, "marker"))
			ev := next(t, w, "a/b/g or the marker", func(ev dirwatch.Event) bool {
				return ev.Path == join(root, "a", "b", "g") || ev.Path == join(root, "marker")
			})
			if seen := ev.Path != join(root, "marker"); seen != tc.deepSeen {
				t.Fatalf("a/b/g reported = %t, want %t", seen, tc.deepSeen)
			}
		})
	}
}

func TestReportExisting(t *testing.T) {
	root, staging := t.TempDir(), t.TempDir()
	w, err := start(t, root, dirwatch.Options{MaxDepth: dirwatch.Unlimited, ReportExisting: true})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	// A tree renamed in at once: only its root has an inotify event.
	mkdir(t, join(staging, "tree", "sub"))
	touch(t, join(staging, "tree", "sub", "sock"))
	if err := os.Rename(join(staging, "tree"), join(root, "tree")); err != nil {
		t.Fatal(err)
	}
	next(t, w, "create tree", isOp(dirwatch.Create, join(root, "tree")))
	next(t, w, "create tree/sub", isOp(dirwatch.Create, join(root, "tree", "sub")))
	next(t, w, "create tree/sub/sock", isOp(dirwatch.Create, join(root, "tree", "sub", "sock")))
	if !w.Watching(join(root, "tree", "sub")) {
		t.Fatal("tree/sub not watched")
	}
}

func TestIgnoredNames(t *testing.T) {
	root := t.TempDir()
	w, err := start(t, root, dirwatch.Options{MaxDepth: dirwatch.Unlimited, Ignore: func(n string) bool { return strings.HasPrefix(n, ".") }})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	mkdir(t, join(root, ".hidden"))
	touch(t, join(root, ".hidden", "f"))
	touch(t, join(root, ".tmp"))
	touch(t, join(root, "visible"))
	ev := next(t, w, "any event", func(dirwatch.Event) bool { return true })
	if ev.Path != join(root, "visible") {
		t.Fatalf("first event %+v, want the create of visible", ev)
	}
	if w.Watching(join(root, ".hidden")) {
		t.Fatal("ignored directory watched")
	}
}

func TestRootRemovedAndRecreated(t *testing.T) {
	root := join(t.TempDir(), "plugins")
	m := &counts{}
	w, err := start(t, root, dirwatch.Options{MaxDepth: 1, CreateRoot: true, RetryMin: 10 * time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	mkdir(t, join(root, "d"))
	next(t, w, "create d", isOp(dirwatch.Create, join(root, "d")))
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	next(t, w, "root removed", isOp(dirwatch.Remove, root))
	next(t, w, "root recovered", isRescan(dirwatch.ReasonRootRecovered))
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Fatalf("root not created again: %v", err)
	}
	if m.available.Load() != 1 {
		t.Fatal("root not reported available")
	}
	mkdir(t, join(root, "e"))
	next(t, w, "create e after recovery", isOp(dirwatch.Create, join(root, "e")))
	if w.Watching(join(root, "d")) {
		t.Fatal("removed directory still counted as watched")
	}
}

func TestRootMissingIsWaitedFor(t *testing.T) {
	root := join(t.TempDir(), "later")
	m := &counts{}
	w, err := start(t, root, dirwatch.Options{RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond, Metrics: m})
	if err == nil {
		t.Fatal("Start succeeded without the root")
	}
	ev := next(t, w, "root unavailable", isOp(dirwatch.RootUnavailable, root))
	if !errors.Is(ev.Err, os.ErrNotExist) || ev.RetryIn != 10*time.Millisecond {
		t.Fatalf("unexpected %+v", ev)
	}
	if m.available.Load() != -1 {
		t.Fatal("root not reported unavailable")
	}
	mkdir(t, root)
	next(t, w, "root appeared", isRescan(dirwatch.ReasonRootRecovered))
	touch(t, join(root, "f"))
	next(t, w, "create f", isOp(dirwatch.Create, join(root, "f")))
}

func TestSymlinks(t *testing.T) {
	root, store := t.TempDir(), t.TempDir()
	mkdir(t, join(store, "v1"))
	mkdir(t, join(store, "v2"))
	symlink(t, join(store, "v1"), join(root, "link"))
	w, err := start(t, root, dirwatch.Options{MaxDepth: 1, FollowSymlinks: true,
		Ignore: func(n string) bool { return strings.HasPrefix(n, ".") }})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	// A link present at start is followed.
	touch(t, join(store, "v1", "a"))
	next(t, w, "write in the target", isOp(dirwatch.Create, join(root, "link", "a")))
	// Pointed elsewhere atomically, the link watches its new target.
	symlink(t, join(store, "v2"), join(root, ".tmp"))
	if err := os.Rename(join(root, ".tmp"), join(root, "link")); err != nil {
		t.Fatal(err)
	}
	next(t, w, "link replaced", isOp(dirwatch.Create, join(root, "link")))
	touch(t, join(store, "v2", "b"))
	next(t, w, "write in the new target", isOp(dirwatch.Create, join(root, "link", "b")))
	// Removed, the link no longer reports its target.
	if err := os.Remove(join(root, "link")); err != nil {
		t.Fatal(err)
	}
	next(t, w, "link removed", isOp(dirwatch.Remove, join(root, "link")))
	touch(t, join(store, "v2", "c"))
	touch(t, join(root, "marker"))
	if ev := next(t, w, "next event", func(dirwatch.Event) bool { return true }); ev.Path != join(root, "marker") {
		t.Fatalf("got %+v, want the marker's create", ev)
	}
}

func TestSymlinksNotFollowed(t *testing.T) {
	root, store := t.TempDir(), t.TempDir()
	w, err := start(t, root, dirwatch.Options{MaxDepth: dirwatch.Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	symlink(t, store, join(root, "link"))
	next(t, w, "link created", isOp(dirwatch.Create, join(root, "link")))
	if w.Watching(join(root, "link")) {
		t.Fatal("link followed")
	}
}

func TestInjectedErrors(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		reason dirwatch.Reason
	}{
		{name: "overflow", err: fsnotify.ErrEventOverflow, reason: dirwatch.ReasonOverflow},
		{name: "other error", err: errors.New("boom"), reason: dirwatch.ReasonWatchError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fsw := newInjectFS(t)
			m := &counts{}
			w, err := start(t, root, dirwatch.Options{MaxDepth: 1, Metrics: m,
				NewFSWatcher: func() (dirwatch.FSWatcher, error) { return fsw, nil }})
			if err != nil {
				t.Fatal(err)
			}
			next(t, w, "start", isRescan(dirwatch.ReasonStarted))
			fsw.Drop(true)
			mkdir(t, join(root, "lost"))
			fsw.Inject(tc.err)
			next(t, w, "rescan", isRescan(tc.reason))
			// The directory whose event was lost is watched after the rescan.
			if !w.Watching(join(root, "lost")) {
				t.Fatal("directory created during lost events not watched")
			}
			if got := m.overflows.Load() + m.watchErrors.Load(); got != 1 {
				t.Fatalf("metrics counted %d errors, want 1", got)
			}
		})
	}
}

func TestUnwatchableDirectoryIsRetried(t *testing.T) {
	root := t.TempDir()
	fsw := newInjectFS(t)
	m := &counts{}
	bad := join(root, "bad")
	fsw.FailAdd(bad, true)
	w, err := start(t, root, dirwatch.Options{MaxDepth: 1, Metrics: m, RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		NewFSWatcher: func() (dirwatch.FSWatcher, error) { return fsw, nil }})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	// Each attempt to watch bad: the first, then the retries.
	attempts := make(chan struct{}, 16)
	fsw.BeforeAdd(func(path string) {
		if path == bad {
			select {
			case attempts <- struct{}{}:
			default:
			}
		}
	})
	mkdir(t, bad)
	next(t, w, "unwatchable", isOp(dirwatch.Unwatchable, bad))
	next(t, w, "create bad", isOp(dirwatch.Create, bad))
	// The third attempt starts after the first retry has failed and been
	// handled.
	timeout := time.After(10 * time.Second)
	for n := 0; n < 3; n++ {
		select {
		case <-attempts:
		case <-timeout:
			t.Fatalf("%d attempts to watch %s in 10 s, want 3", n, bad)
		}
	}
	if got := m.watchFailed.Load(); got != 1 {
		t.Fatalf("failure reported %d times, want once", got)
	}
	fsw.BeforeAdd(nil)
	fsw.FailAdd(bad, false)
	next(t, w, "recovered", isRescan(dirwatch.ReasonWatchRecovered))
	if !w.Watching(bad) {
		t.Fatal("not watched after recovery")
	}
}

func TestResync(t *testing.T) {
	root := t.TempDir()
	w, err := start(t, root, dirwatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	w.Resync()
	w.Resync()
	next(t, w, "requested", isRescan(dirwatch.ReasonRequested))
}

func TestRelativeRootRefused(t *testing.T) {
	if _, err := dirwatch.New(filepath.Join("relative", "dir"), dirwatch.Options{}); err == nil {
		t.Fatal("relative root accepted")
	}
}

// TestDirectoryVanishingWhileWatched: a directory removed between the walk
// finding it and its watch being added is reported once and does not stop
// the walk; its siblings are watched.
func TestDirectoryVanishingWhileWatched(t *testing.T) {
	root := t.TempDir()
	victim := join(root, "a-vanishing")
	mkdir(t, join(victim, "deeper"))
	mkdir(t, join(root, "b", "c"))
	fsw := newInjectFS(t)
	fsw.BeforeAdd(func(path string) {
		if path == victim {
			_ = os.RemoveAll(victim)
		}
	})
	m := &counts{}
	w, err := start(t, root, dirwatch.Options{MaxDepth: dirwatch.Unlimited, Metrics: m,
		NewFSWatcher: func() (dirwatch.FSWatcher, error) { return fsw, nil }})
	if err != nil {
		t.Fatal(err)
	}
	next(t, w, "unwatchable", isOp(dirwatch.Unwatchable, victim))
	next(t, w, "start", isRescan(dirwatch.ReasonStarted))
	if !w.Watching(join(root, "b", "c")) {
		t.Fatal("sibling after the vanished directory not watched")
	}
	if m.watchFailed.Load() != 1 {
		t.Fatalf("watch failures = %d, want 1", m.watchFailed.Load())
	}
}
