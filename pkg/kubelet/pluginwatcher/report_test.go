package pluginwatcher

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/textlogger"
)

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
			r := newReporter(Options{LogInterval: time.Hour, LogBudget: 3, Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"}})
			r.setLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.Verbosity(tc.verbosity))))
			for _, k := range tc.successes {
				r.success("Plugin registered", k, EventPluginRegistered)
			}
			for _, k := range tc.warnings {
				r.warn("Plugin registration failed", k, EventPluginFailed, fmt.Errorf("boom"))
			}
			r.flush()
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

// lineCounter counts the lines written to it.
type lineCounter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *lineCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// TestFloodLogLines: with registrations logged at V(2), one plugin that
// floods the directory with sockets while another registers normally still
// produces at most 20 log lines.
func TestFloodLogLines(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	opts := fastOptions()
	opts.ThrottleRate, opts.ThrottleBurst = 5, 2
	logs := &lineCounter{}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logs), textlogger.Verbosity(2)))
	w := startWatcherWithLogger(t, logger, dir, opts, testType, h)

	f := newFlooder(t, dir, "flood")
	var last string
	for i := range 300 {
		p, err := f.add(i)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 10 {
			f.dropOldest()
		}
		last = p
	}
	calm := startPlugin(t, filepath.Join(dir, "calm.sock"), pluginInfo(testType, "calm"))
	if s := calm.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("well-behaved plugin not registered during flood: %+v", s)
	}
	eventually(t, "newest flood socket registered", func() bool {
		ep, _ := h.current("flood")
		return ep == last
	})
	w.rep.flush()
	out := logs.String()
	if n := strings.Count(out, "\n"); n > 20 {
		t.Errorf("flood wrote %d log lines, want at most 20:\n%s", n, out)
	}
	if !strings.Contains(out, `"Plugin registered"`) || !strings.Contains(out, `pluginName="calm"`) {
		t.Errorf("registration of the well-behaved plugin not logged at V(2):\n%s", out)
	}
}
