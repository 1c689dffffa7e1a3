package dirwatchtest

import (
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
