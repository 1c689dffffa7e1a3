package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/textlogger"
)

func TestReporterRateLimits(t *testing.T) {
	var buf bytes.Buffer
	r := New(Config{Interval: time.Hour, Budget: 3})
	r.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf))))
	for i := 0; i < 100; i++ {
		r.Info("Plugin registered", "same-plugin", "")
	}
	for _, k := range []string{"p1", "p2", "p3", "p4"} {
		r.Info("Plugin registered", k, "")
	}
	r.Flush()
	lines := strings.Count(buf.String(), "\n")
	if lines != 4 {
		t.Errorf("got %d lines, want 3 (budget) + 1 summary:\n%s", lines, buf.String())
	}
	if !strings.Contains(buf.String(), "count=101") {
		t.Errorf("summary does not count the 101 suppressed lines:\n%s", buf.String())
	}
}

// TestSuccessOutsideLogBudget: successful registrations are logged at V(2)
// for every plugin, whatever the budget; they do not use up the budget of
// other lines; repeats of one plugin are held back; their events have a
// budget of their own.
func TestSuccessOutsideLogBudget(t *testing.T) {
	distinct := func(n int) []string {
		var keys []string
		for i := range n {
			keys = append(keys, fmt.Sprintf("TestPlugin/p%d", i))
		}
		return keys
	}
	tests := []struct {
		name           string
		verbosity      int
		successes      []string
		warnings       []string
		wantRegistered int
		wantWarnings   int
		wantSummary    string
		wantEvents     int
	}{
		{
			name: "restart with more plugins than the budget", verbosity: 2,
			successes: distinct(20), wantRegistered: 20, wantEvents: 3,
		},
		{
			name: "registrations leave the budget to warnings", verbosity: 2,
			successes: distinct(20), warnings: []string{"w1", "w2", "w3", "w4"},
			wantRegistered: 20, wantWarnings: 3, wantSummary: "count=1", wantEvents: 6,
		},
		{
			name: "plugin registering in a loop is logged once", verbosity: 2,
			successes: append(distinct(1), distinct(1)[0], distinct(1)[0]), wantRegistered: 1,
			wantSummary: "count=2", wantEvents: 1,
		},
		{
			name: "registrations are not logged at V(0)", verbosity: 0,
			successes: distinct(20), wantEvents: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			rec := record.NewFakeRecorder(100)
			r := New(Config{Interval: time.Hour, Budget: 3, Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"}})
			r.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.Verbosity(tc.verbosity))))
			for _, k := range tc.successes {
				r.Success("Plugin registered", k, EventPluginRegistered)
			}
			for _, k := range tc.warnings {
				r.Warn("Plugin registration failed", k, EventPluginFailed, fmt.Errorf("boom"))
			}
			r.Flush()
			out := buf.String()
			if n := strings.Count(out, `] "Plugin registered"`); n != tc.wantRegistered {
				t.Errorf("%d registration lines, want %d:\n%s", n, tc.wantRegistered, out)
			}
			if n := strings.Count(out, `] "Plugin registration failed"`); n != tc.wantWarnings {
				t.Errorf("%d warning lines, want %d:\n%s", n, tc.wantWarnings, out)
			}
			if got := strings.Contains(out, "Suppressed"); got != (tc.wantSummary != "") || got && !strings.Contains(out, tc.wantSummary) {
				t.Errorf("summary: want %q:\n%s", tc.wantSummary, out)
			}
			if n := len(rec.Events); n != tc.wantEvents {
				t.Errorf("%d events, want %d", n, tc.wantEvents)
			}
		})
	}
}
