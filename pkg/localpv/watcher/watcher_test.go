package watcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
)

type call struct {
	view   View
	reason v1alpha1.NotificationReason
}

type fakeNotifier struct {
	mu       sync.Mutex
	failures int
	calls    chan call
}

func (n *fakeNotifier) Notify(_ context.Context, v View, r v1alpha1.NotificationReason) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failures > 0 {
		n.failures--
		return errors.New("apiserver unavailable")
	}
	n.calls <- call{v, r}
	return nil
}

// next waits, boundedly, for the next notification.
func (n *fakeNotifier) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-n.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no notification within 10s")
	}
	return call{}
}

// quietMountTable returns a copy of the mount table in a regular file, for
// Options.MountInfoPath. The watcher reads and polls it like the real one,
// but a regular file never flags POLLPRI, so a mount made elsewhere on the
// machine cannot make the watcher look. Tests of the packages under
// pkg/localpv run in parallel in one mount namespace and mount all the
// time; such a mount makes the watcher look, and report what it finds as
// Changed, before the path under test does.
func quietMountTable(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(discovery.SelfMountInfo)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func startWatcher(t *testing.T, opts Options, n Notifier) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- New(opts, &discovery.Scanner{}, n).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestWatcherFollowsDirectoryAndMountChanges(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	n := &fakeNotifier{calls: make(chan call, 10)}
	startWatcher(t, Options{Classes: []discovery.ClassSpec{{Name: "fast", MountDir: dir, VolumeMode: "Filesystem", NamePattern: "*"}},
		Resync: time.Hour}, n)
	first := n.next(t)
	if first.reason != v1alpha1.ReasonStarted || first.view.Entries != 0 {
		t.Fatalf("first notification = %+v", first)
	}
	if err := os.Mkdir(filepath.Join(dir, "vol1"), 0o755); err != nil {
		t.Fatal(err)
	}
	second := n.next(t)
	if second.reason != v1alpha1.ReasonChanged || second.view.Entries != 1 || second.view.Digest == first.view.Digest {
		t.Fatalf("inotify change not reported: %+v", second)
	}
	// A mount creates no inotify event in the parent; the mount table does.
	testutil.MountTmpfs(t, filepath.Join(dir, "vol1"), 1<<20)
	third := n.next(t)
	if third.view.Digest == second.view.Digest {
		t.Fatal("mount not reported")
	}
	// Unrelated file system activity elsewhere causes no notification: the
	// next one is that of the entry made after it.
	if err := os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "vol2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if fourth := n.next(t); fourth.view.Entries != 2 {
		t.Fatalf("notification before the second entry's: %+v", fourth)
	}
}

func TestWatcherRetriesFailedNotifications(t *testing.T) {
	n := &fakeNotifier{calls: make(chan call, 10), failures: 2}
	startWatcher(t, Options{Classes: []discovery.ClassSpec{{Name: "fast", MountDir: t.TempDir(), NamePattern: "*"}},
		Resync: time.Hour, RetryBase: 10 * time.Millisecond}, n)
	if c := n.next(t); c.reason != v1alpha1.ReasonStarted {
		t.Fatalf("want the start notification after retries, got %+v", c)
	}
}

// TestResyncFindsDirectoryCreatedLater: a class directory that does not
// exist at start is found when it appears, by the resync ticker or by the
// directory watch's retry, whichever comes first; both report a resync.
// The mount table is a quiet copy: a mount elsewhere would make the watcher
// look first and report a change.
func TestResyncFindsDirectoryCreatedLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	n := &fakeNotifier{calls: make(chan call, 10)}
	startWatcher(t, Options{Classes: []discovery.ClassSpec{{Name: "fast", MountDir: dir, NamePattern: "*"}},
		MountInfoPath: quietMountTable(t), Resync: 100 * time.Millisecond}, n)
	n.next(t)
	// The directory appears with its entry in one step (a rename), so a
	// resync cannot see it empty in between.
	staging := filepath.Join(filepath.Dir(dir), "staging")
	if err := os.MkdirAll(filepath.Join(staging, "vol1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(staging, dir); err != nil {
		t.Fatal(err)
	}
	if c := n.next(t); c.reason != v1alpha1.ReasonResync || c.view.Entries != 1 {
		t.Fatalf("resync did not report the new directory: %+v", c)
	}
	// From now on it is watched; inotify or the next resync reports the
	// second entry.
	if err := os.Mkdir(filepath.Join(dir, "vol2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c := n.next(t); c.view.Entries != 2 {
		t.Fatalf("second entry not reported: %+v", c)
	}
}

func TestNotifierCreatesThenUpdates(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.SchemeGroupVersionResource: v1alpha1.ListKind})
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	n := NewNotifier(dyn, "node-a", clk)
	ctx := t.Context()
	v := View{Digest: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Entries: 3}
	if err := n.Notify(ctx, v, v1alpha1.ReasonStarted); err != nil {
		t.Fatal(err)
	}
	v.Entries = 4
	if err := n.Notify(ctx, v, v1alpha1.ReasonChanged); err != nil {
		t.Fatal(err)
	}
	u, err := dyn.Resource(v1alpha1.SchemeGroupVersionResource).Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := v1alpha1.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if errs := v1alpha1.Validate(s); len(errs) > 0 {
		t.Fatalf("notifier wrote an invalid object: %v", errs)
	}
	if s.Spec.Entries != 4 || s.Spec.Reason != v1alpha1.ReasonChanged || s.Spec.NodeName != "node-a" {
		t.Fatalf("unexpected spec %+v", s.Spec)
	}
}
