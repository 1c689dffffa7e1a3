package watcher

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		at      int    // ms after t0
		what    string // "file", "mount", "retry", "run"
		wantDue int    // ms after t0, for everything but "run"
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "mount after a quiet interval is looked at at once", steps: []step{
			{at: 0, what: "run"}, {at: 500, what: "mount", wantDue: 500}}},
		{name: "mount soon after a look waits for the end of the interval", steps: []step{
			{at: 0, what: "run"}, {at: 30, what: "mount", wantDue: 100}}},
		{name: "file event is debounced", steps: []step{
			{at: 0, what: "run"}, {at: 500, what: "file", wantDue: 600}}},
		{name: "burst of file events keeps the first deadline", steps: []step{
			{at: 0, what: "run"}, {at: 500, what: "file", wantDue: 600}, {at: 550, what: "file", wantDue: 600}}},
		{name: "mkdir then mount: the mount brings the look forward", steps: []step{
			{at: 0, what: "run"}, {at: 500, what: "file", wantDue: 600}, {at: 505, what: "mount", wantDue: 505}}},
		{name: "mount during a burst is folded into the pending look", steps: []step{
			{at: 0, what: "run"}, {at: 500, what: "mount", wantDue: 500}, {at: 500, what: "run"},
			{at: 510, what: "mount", wantDue: 600}, {at: 520, what: "mount", wantDue: 600}}},
		{name: "retry later than a due look changes nothing", steps: []step{
			{at: 0, what: "run"}, {at: 500, what: "mount", wantDue: 500}, {at: 500, what: "retry", wantDue: 500}}},
		{name: "first mount before any look is looked at at once", steps: []step{
			{at: 10, what: "mount", wantDue: 10}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &pacer{debounce: 100 * time.Millisecond}
			for i, s := range tc.steps {
				var got time.Time
				switch s.what {
				case "run":
					p.running(ms(s.at))
					if !p.idle() {
						t.Fatalf("step %d: a look is due right after one started", i)
					}
					continue
				case "file":
					got = p.fileEvent(ms(s.at))
				case "mount":
					got = p.mountEvent(ms(s.at))
				case "retry":
					got = p.retry(ms(1000))
				}
				if want := ms(s.wantDue); !got.Equal(want) {
					t.Fatalf("step %d (%s at %d ms): due at %v, want %d ms", i, s.what, s.at, got.Sub(t0), s.wantDue)
				}
			}
		})
	}
}
