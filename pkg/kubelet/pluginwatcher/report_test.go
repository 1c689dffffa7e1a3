package pluginwatcher

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2/textlogger"
)

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
	w.rep.Flush()
	out := logs.String()
	if n := strings.Count(out, "\n"); n > 20 {
		t.Errorf("flood wrote %d log lines, want at most 20:\n%s", n, out)
	}
	if !strings.Contains(out, `"Plugin registered"`) || !strings.Contains(out, `pluginName="calm"`) {
		t.Errorf("registration of the well-behaved plugin not logged at V(2):\n%s", out)
	}
}
