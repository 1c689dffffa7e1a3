package dirwatchtest

import (
	"errors"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

func TestFake(t *testing.T) {
	f := NewFake("/plugins", nil)
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(t.Context()); err == nil {
		t.Fatal("second Start succeeded")
	}
	go f.Send(t.Context(), dirwatch.Event{Op: dirwatch.Create, Path: "/plugins/a"})
	if ev := <-f.Events(); ev.Path != "/plugins/a" || !ev.Op.Has(dirwatch.Create) {
		t.Fatalf("unexpected %+v", ev)
	}
	f.SetWatching("/plugins/a", true)
	if !f.Watching("/plugins/a") || f.Watching("/plugins/b") {
		t.Fatal("Watching does not report what was set")
	}
	f.Resync()
	if f.Resyncs() != 1 {
		t.Fatalf("Resyncs = %d, want 1", f.Resyncs())
	}
	f.Close()
	if _, ok := <-f.Events(); ok {
		t.Fatal("events not closed")
	}
}

func TestFakeNew(t *testing.T) {
	tests := []struct {
		name    string
		root    string
		wantErr bool
	}{
		{name: "the fake's root", root: "/plugins"},
		{name: "another root", root: "/elsewhere", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake("/plugins", nil)
			var newWatcher dirwatch.NewFunc = f.New
			w, err := newWatcher(tc.root, dirwatch.Options{MaxDepth: 3})
			if tc.wantErr {
				if err == nil || f.Made() != 0 {
					t.Fatalf("New(%q) = %v, made %d; want an error and nothing made", tc.root, err, f.Made())
				}
				return
			}
			if err != nil || w != dirwatch.Watcher(f) {
				t.Fatalf("New(%q) = %v, %v; want the fake", tc.root, w, err)
			}
			if f.Made() != 1 || f.Options().MaxDepth != 3 {
				t.Fatalf("made %d with %+v; want 1 with MaxDepth 3", f.Made(), f.Options())
			}
		})
	}
}

func TestInjectFSNew(t *testing.T) {
	fsw, err := NewInjectFS()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	w, err := fsw.New(root, dirwatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fsw.FailAdd(root, true)
	if err := w.Start(t.Context()); !errors.Is(err, ErrInjected) {
		t.Fatalf("Start = %v, want the injected failure of the root's watch", err)
	}
}
