package flexadapter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

// recordingSink keeps the events it receives.
type recordingSink struct {
	mu     sync.Mutex
	events []prober.Event
}

func (s *recordingSink) Event(_ context.Context, ev prober.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
}

func (s *recordingSink) reasons() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ev := range s.events {
		out = append(out, ev.Reason+"/"+ev.Driver)
	}
	return out
}

func warning(driver string) prober.Event {
	return prober.Event{Type: prober.EventTypeWarning, Reason: prober.ReasonDriverInitFailed, Driver: driver}
}

func normal(driver string) prober.Event {
	return prober.Event{Type: prober.EventTypeNormal, Reason: prober.ReasonDriverLoaded, Driver: driver}
}

func TestEventBuffer(t *testing.T) {
	many := func(n int, mk func(string) prober.Event, prefix string) []prober.Event {
		var evs []prober.Event
		for i := range n {
			evs = append(evs, mk(fmt.Sprintf("%s%d", prefix, i)))
		}
		return evs
	}
	reasons := func(evs []prober.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Reason+"/"+ev.Driver)
		}
		return out
	}
	tests := []struct {
		name   string
		before []prober.Event
		after  []prober.Event
		want   []prober.Event
	}{
		{
			name: "no events",
		},
		{
			name:   "events before the sink are replayed in order",
			before: []prober.Event{warning("a"), normal("b")},
			after:  []prober.Event{normal("c")},
			want:   []prober.Event{warning("a"), normal("b"), normal("c")},
		},
		{
			name:   "full buffer evicts Normal events first",
			before: append([]prober.Event{warning("w0"), normal("n0")}, many(maxPendingEvents-1, warning, "x")...),
			want:   append([]prober.Event{warning("w0")}, many(maxPendingEvents-1, warning, "x")...),
		},
		{
			name:   "full buffer of Warnings drops new Normal events",
			before: append(many(maxPendingEvents, warning, "x"), normal("late")),
			want:   many(maxPendingEvents, warning, "x"),
		},
		{
			name:   "full buffer of Warnings evicts the oldest Warning",
			before: append(many(maxPendingEvents, warning, "x"), warning("late")),
			want:   append(many(maxPendingEvents, warning, "x")[1:], warning("late")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b eventBuffer
			sink := &recordingSink{}
			for _, ev := range tc.before {
				b.event(t.Context(), ev)
			}
			b.setSink(t.Context(), sink)
			for _, ev := range tc.after {
				b.event(t.Context(), ev)
			}
			if got, want := sink.reasons(), reasons(tc.want); !slices.Equal(got, want) {
				t.Errorf("sink got %q, want %q", got, want)
			}
		})
	}
}

// TestStartupEventsReplayed: problems found by the scan inside NewSource,
// before any sink exists, reach the sink set afterwards.
func TestStartupEventsReplayed(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~broken", "broken", failInit)
	install(t, root, "Bad~Name", "Name", failInit)
	p := newTestProber(t, root, fastOptions())
	eventually(t, "init failure", func() bool {
		e := p.Library().Snapshot().Entries["example.com/broken"]
		return e != nil && e.State == prober.StateInitFailed
	})
	sink := &recordingSink{}
	p.SetEventSink(sink)
	got := sink.reasons()
	for _, want := range []string{
		prober.ReasonDriverInitFailed + "/example.com/broken",
		prober.ReasonDriverDirInvalid + "/Bad~Name",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("sink got %q, want %q among them", got, want)
		}
	}
}
