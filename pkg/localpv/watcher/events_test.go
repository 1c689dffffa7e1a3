package watcher

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch/dirwatchtest"
)

// TestDirectoryEventsMapToReasons drives the watcher with a fake directory
// watcher: changes and lost events are changes, a directory found again by
// retrying is a resync. The mount table is a quiet copy, so that a mount
// elsewhere cannot make the watcher look, and report a change, before the
// event under test.
func TestDirectoryEventsMapToReasons(t *testing.T) {
	dir := t.TempDir()
	fake := dirwatchtest.NewFake(dir, nil)
	n := &fakeNotifier{calls: make(chan call, 10)}
	w := New(Options{Classes: []discovery.ClassSpec{{Name: "fast", MountDir: dir, NamePattern: "*"}},
		MountInfoPath: quietMountTable(t), Resync: time.Hour, Debounce: time.Millisecond}, &discovery.Scanner{}, n).(*watcher)
	w.newDirWatcher = fake.New
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		fake.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if c := n.next(t); c.reason != v1alpha1.ReasonStarted {
		t.Fatalf("first notification = %+v", c)
	}
	if o := fake.Options(); o.MaxDepth != 0 || o.RetryMin != time.Hour || o.RetryMax != time.Hour {
		t.Errorf("class directory watched with %+v, want the directory alone, retried every resync", o)
	}
	tests := []struct {
		name string
		ev   dirwatch.Event
		want v1alpha1.NotificationReason
	}{
		{name: "directory found again", ev: dirwatch.Event{Op: dirwatch.Rescan, Reason: dirwatch.ReasonRootRecovered}, want: v1alpha1.ReasonResync},
		{name: "file event", ev: dirwatch.Event{Op: dirwatch.Create}, want: v1alpha1.ReasonChanged},
		{name: "overflow", ev: dirwatch.Event{Op: dirwatch.Rescan, Reason: dirwatch.ReasonOverflow}, want: v1alpha1.ReasonChanged},
		{name: "directory removed", ev: dirwatch.Event{Op: dirwatch.Remove, Path: dir}, want: v1alpha1.ReasonChanged},
	}
	for i, tc := range tests {
		vol := filepath.Join(dir, "vol"+string(rune('a'+i)))
		if err := os.Mkdir(vol, 0o755); err != nil {
			t.Fatal(err)
		}
		if tc.ev.Path == "" {
			tc.ev.Path = vol
		}
		fake.Send(ctx, tc.ev)
		if c := n.next(t); c.reason != tc.want {
			t.Errorf("%s: reason %s, want %s", tc.name, c.reason, tc.want)
		}
	}
}
