package pluginwatcher

import (
	"strings"
	"testing"
	"time"
)

// TestExpectHandlerThenAddHandler: a plugin whose type the kubelet serves
// but whose handler is not there yet (the DRA manager before the container
// manager started) gets a negative status saying why and that it will be
// retried; when the handler is added it is registered at once, long before
// its backoff (a minute here) would have retried it.
func TestExpectHandlerThenAddHandler(t *testing.T) {
	dir := testDir(t)
	opts := fastOptions()
	opts.RetryBase, opts.RetryMax = time.Minute, time.Minute
	w := startWatcher(t, dir, opts, "", nil)
	w.ExpectHandler(DRAPlugin, "the kubelet's DRA manager has not started yet")

	p := startPlugin(t, dir+"/gpu.example.com-reg.sock", pluginInfo(DRAPlugin, "gpu.example.com", "v1.DRAPlugin"))
	s := p.waitStatus(t)
	if s.PluginRegistered || !strings.Contains(s.Error, "the kubelet's DRA manager has not started yet") ||
		!strings.Contains(s.Error, "retried as soon as") {
		t.Fatalf("status before the handler = %+v, want a refusal naming the reason and the retry", s)
	}

	h := newRecordingHandler(t)
	added := time.Now()
	w.AddHandler(DRAPlugin, h)
	if s := p.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("status after the handler was added = %+v, want registered", s)
	}
	if waited := time.Since(added); waited >= opts.RetryBase {
		t.Errorf("registered %v after the handler was added: it waited for its backoff", waited)
	}
	if ep, _ := h.current("gpu.example.com"); ep != p.path {
		t.Errorf("registered endpoint %q, want %q", ep, p.path)
	}
}
