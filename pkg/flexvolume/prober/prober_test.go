package prober

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

func TestExistingDriverAtStart(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~fast", "fast", script(capsNoAttach))
	p := newTestProber(t, root, testOptions(&sink{}))
	// New waits for the initial inits: no polling needed.
	if !ready("example.com/fast", false)(p.Snapshot()) {
		t.Fatalf("driver not ready when New returned: %s", describe(p.Snapshot()))
	}
}

func TestInstall(t *testing.T) {
	root := t.TempDir()
	s := &sink{}
	p := newTestProber(t, root, testOptions(s))
	install(t, root, "example.com~nfs", "nfs", script(capsAttach))
	snap := waitFor(t, p, "install", ready("example.com/nfs", true))
	e := snap.Entries["example.com/nfs"]
	if e.ExecPath != filepath.Join(root, "example.com~nfs", "nfs") || e.DirName != "example.com~nfs" {
		t.Errorf("entry = %+v", e)
	}
	if s.count(ReasonDriverLoaded, "example.com/nfs") != 1 {
		t.Errorf("want one %s event, got %v", ReasonDriverLoaded, s.events)
	}
}

func TestUpdate(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~nfs", "nfs", script(capsAttach))
	p := newTestProber(t, root, testOptions(&sink{}))
	v1 := waitFor(t, p, "v1", ready("example.com/nfs", true)).Entries["example.com/nfs"]
	install(t, root, "example.com~nfs", "nfs", script(capsNoAttach))
	v2 := waitFor(t, p, "v2", ready("example.com/nfs", false)).Entries["example.com/nfs"]
	if v2.Version == v1.Version || v2.Driver == v1.Driver {
		t.Errorf("update did not give a new entry and driver: %+v -> %+v", v1, v2)
	}
}

func TestAddSecondDriver(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~one", "one", script(capsNoAttach))
	p := newTestProber(t, root, testOptions(&sink{}))
	one := waitFor(t, p, "first", ready("example.com/one", false)).Entries["example.com/one"]
	install(t, root, "example.com~two", "two", script(capsAttach))
	snap := waitFor(t, p, "second", ready("example.com/two", true))
	if snap.Entries["example.com/one"] != one {
		t.Errorf("adding a driver changed the first one: %s", describe(snap))
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name   string
		remove func(root string) error
	}{
		{"driver directory", func(root string) error { return os.RemoveAll(filepath.Join(root, "example.com~nfs")) }},
		{"executable only", func(root string) error { return os.Remove(filepath.Join(root, "example.com~nfs", "nfs")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			s := &sink{}
			install(t, root, "example.com~nfs", "nfs", script(capsAttach))
			p := newTestProber(t, root, testOptions(s))
			waitFor(t, p, "install", ready("example.com/nfs", true))
			if err := tc.remove(root); err != nil {
				t.Fatal(err)
			}
			waitFor(t, p, "removal", absent("example.com/nfs"))
			if s.count(ReasonDriverRemoved, "example.com/nfs") != 1 {
				t.Errorf("want one %s event", ReasonDriverRemoved)
			}
		})
	}
}

func TestDotfilesIgnored(t *testing.T) {
	root := t.TempDir()
	p := newTestProber(t, root, testOptions(&sink{}))
	before := p.Stats().Scans
	// Hidden driver directories, temp files of an atomic install, and
	// anything below a hidden directory: none may trigger a scan.
	install(t, root, ".hidden~x", "x", script(capsNoAttach))
	if err := os.WriteFile(filepath.Join(root, ".tmp-file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".staging", "vendor~d"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A visible change afterwards is the only one scanned. It arrives as
	// one event, a whole driver directory renamed in from a hidden staging
	// directory (as the atomic installer does): a directory made in place
	// and its executable written after are two events, which the scan burst
	// may scan apart.
	install(t, root, filepath.Join(".staging", "example.com~visible"), "visible", script(capsNoAttach))
	if err := os.Rename(filepath.Join(root, ".staging", "example.com~visible"), filepath.Join(root, "example.com~visible")); err != nil {
		t.Fatal(err)
	}
	snap := waitFor(t, p, "visible driver", ready("example.com/visible", false))
	if got := p.Stats().Scans - before; got != 1 {
		t.Errorf("dotfile changes caused scans: %d scans, want 1", got)
	}
	if len(snap.Entries) != 1 {
		t.Errorf("hidden driver loaded: %s", describe(snap))
	}
}

func TestBurst(t *testing.T) {
	root := t.TempDir()
	opts := testOptions(&sink{})
	opts.MinScanInterval = 300 * time.Millisecond
	p := newTestProber(t, root, opts)
	before := p.Stats()
	start := time.Now()
	const n = 200
	for i := 0; i < n; i++ {
		caps := capsAttach
		if i == n-1 {
			caps = capsNoAttach // the final state must be seen
		}
		install(t, root, "example.com~burst", "burst", script(caps))
	}
	elapsed := time.Since(start)
	waitFor(t, p, "final version", ready("example.com/burst", false))
	after := p.Stats()
	// scanBurst scans at once, one per interval while the burst lasts,
	// and one when the next is allowed after it ends.
	limit := scanBurst + 1 + uint64(elapsed/opts.MinScanInterval)
	if scans := after.Scans - before.Scans; scans > limit {
		t.Errorf("%d events in %v caused %d scans, want at most %d", n, elapsed, scans, limit)
	}
	if inits := after.Inits - before.Inits; inits > limit {
		t.Errorf("%d inits, want at most %d", inits, limit)
	}
}

func TestInitFailure(t *testing.T) {
	root := t.TempDir()
	s := &sink{}
	opts := testOptions(s)
	opts.InitRetryMin, opts.InitRetryMax = 20*time.Millisecond, 40*time.Millisecond
	install(t, root, "example.com~good", "good", script(capsNoAttach))
	install(t, root, "example.com~bad", "bad", failingInit)
	p := newTestProber(t, root, opts)
	snap := waitFor(t, p, "bad driver failed", inState("example.com/bad", StateInitFailed))
	e := snap.Entries["example.com/bad"]
	if !strings.Contains(e.Err.Error(), "backend unreachable") || e.Capabilities.Attach {
		t.Errorf("failed entry = %+v", e)
	}
	if !strings.Contains(snap.Problems["driver:example.com/bad"], "backend unreachable") {
		t.Errorf("problem not published: %s", describe(snap))
	}
	if !ready("example.com/good", false)(snap) {
		t.Errorf("good driver affected: %s", describe(snap))
	}
	// Retries run (with backoff) but are reported once.
	pollUntil(t, "three init failures", func() bool { return p.Stats().InitFailures >= 3 })
	if n := s.count(ReasonDriverInitFailed, "example.com/bad"); n != 1 {
		t.Errorf("init failure reported %d times, want once", n)
	}
}

func TestUpdateFailsInit(t *testing.T) {
	root := t.TempDir()
	s := &sink{}
	install(t, root, "example.com~nfs", "nfs", script(capsAttach))
	p := newTestProber(t, root, testOptions(s))
	waitFor(t, p, "v1", ready("example.com/nfs", true))
	install(t, root, "example.com~nfs", "nfs", failingInit)
	snap := waitFor(t, p, "v2 failed", inState("example.com/nfs", StateInitFailed))
	// Not silently the old version: the entry is marked failed, keeps the
	// last good capabilities for teardown, and carries the error.
	e := snap.Entries["example.com/nfs"]
	if !e.Capabilities.Attach || e.Err == nil {
		t.Errorf("failed update entry = %+v", e)
	}
	if s.count(ReasonDriverInitFailed, "example.com/nfs") != 1 {
		t.Errorf("want one init failure event")
	}
	install(t, root, "example.com~nfs", "nfs", script(capsNoAttach))
	waitFor(t, p, "v3", ready("example.com/nfs", false))
}

func TestRemovalWhileInUse(t *testing.T) {
	root := t.TempDir()
	s := &sink{}
	var used atomic.Bool
	used.Store(true)
	opts := testOptions(s)
	opts.InUse = InUseFunc(func(_ context.Context, name string) (bool, error) {
		return name == "example.com/nfs" && used.Load(), nil
	})
	install(t, root, "example.com~nfs", "nfs", script(capsAttach))
	p := newTestProber(t, root, opts)
	waitFor(t, p, "install", ready("example.com/nfs", true))
	if err := os.RemoveAll(filepath.Join(root, "example.com~nfs")); err != nil {
		t.Fatal(err)
	}
	snap := waitFor(t, p, "removal deferred", inState("example.com/nfs", StateRemoving))
	if e := snap.Entries["example.com/nfs"]; !e.Capabilities.Attach || e.Err == nil {
		t.Errorf("removing entry = %+v", e)
	}
	if s.count(ReasonDriverRemovalDeferred, "example.com/nfs") != 1 {
		t.Errorf("want one %s event", ReasonDriverRemovalDeferred)
	}
	used.Store(false)
	waitFor(t, p, "removal", absent("example.com/nfs"))
	if s.count(ReasonDriverRemovalDeferred, "example.com/nfs") != 1 || s.count(ReasonDriverRemoved, "example.com/nfs") != 1 {
		t.Errorf("events = %+v", s.events)
	}
}

func TestAttachableToNonAttachable(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~nfs", "nfs", script(capsAttach))
	p := newTestProber(t, root, testOptions(&sink{}))
	waitFor(t, p, "attachable", ready("example.com/nfs", true))
	install(t, root, "example.com~nfs", "nfs", script(capsNoAttach))
	waitFor(t, p, "non-attachable", ready("example.com/nfs", false))
	install(t, root, "example.com~nfs", "nfs", script(`{"selinuxRelabel":false}`))
	snap := waitFor(t, p, "attachable again", ready("example.com/nfs", true))
	want := driver.DefaultCapabilities()
	want.SELinuxRelabel = false
	if got := snap.Entries["example.com/nfs"].Capabilities; got != want {
		t.Errorf("capabilities = %+v, want %+v", got, want)
	}
}

func TestSnapshotDoesNotAllocate(t *testing.T) {
	p := newTestProber(t, t.TempDir(), testOptions(&sink{}))
	if n := testing.AllocsPerRun(1000, func() { _ = p.Snapshot() }); n != 0 {
		t.Errorf("Snapshot allocates %v times", n)
	}
}
