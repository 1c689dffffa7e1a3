package pluginwatcher

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	pwmetrics "github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
)

const testType = "TestPlugin"

func TestRegisterThenUnregister(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	w := startWatcher(t, dir, fastOptions(), testType, h)

	path := filepath.Join(dir, "alpha.sock")
	p := startPlugin(t, path, pluginInfo(testType, "alpha"))
	if s := p.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("want registered, got %+v", s)
	}
	if ep, ok := h.current("alpha"); !ok || ep != path {
		t.Fatalf("handler endpoint = %q, %v; want %q (socket path default)", ep, ok, path)
	}
	if n, _ := testutil.GetCounterMetricValue(w.metrics.Registrations.WithLabelValues(testType)); n != 1 {
		t.Errorf("registrations_total = %v, want 1", n)
	}
	if n, _ := testutil.GetHistogramMetricCount(w.metrics.Latency.WithLabelValues(testType)); n != 1 {
		t.Errorf("registration_duration_seconds count = %v, want 1", n)
	}
	if n, _ := testutil.GetGaugeMetricValue(w.metrics.Registered.WithLabelValues(testType)); n != 1 {
		t.Errorf("registered_plugins = %v, want 1", n)
	}

	p.stop()
	eventually(t, "deregistration", func() bool { return h.count("deregister", "alpha") == 1 })
	if _, ok := h.current("alpha"); ok {
		t.Error("plugin still registered after its socket was removed")
	}
}

func TestOptionalEndpoint(t *testing.T) {
	for name, tc := range map[string]struct {
		endpoint string
		want     func(socket string) string
	}{
		"empty endpoint defaults to the socket": {"", func(s string) string { return s }},
		"explicit endpoint is honoured":         {"/run/beta/service.sock", func(string) string { return "/run/beta/service.sock" }},
	} {
		t.Run(name, func(t *testing.T) {
			dir := testDir(t)
			h := newRecordingHandler(t)
			startWatcher(t, dir, fastOptions(), testType, h)
			path := filepath.Join(dir, "beta.sock")
			info := pluginInfo(testType, "beta")
			info.Endpoint = tc.endpoint
			p := startPlugin(t, path, info)
			p.waitStatus(t)
			if ep, _ := h.current("beta"); ep != tc.want(path) {
				t.Errorf("endpoint = %q, want %q", ep, tc.want(path))
			}
		})
	}
}

// TestReplaceSamePath: a plugin restarts on the same path (new inode); the
// old instance is de-registered and the new one registered.
func TestReplaceSamePath(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	startWatcher(t, dir, fastOptions(), testType, h)
	path := filepath.Join(dir, "gamma-reg.sock")
	p1 := startPlugin(t, path, pluginInfo(testType, "gamma"))
	p1.waitStatus(t)

	p1.stop()
	p2 := startPlugin(t, path, pluginInfo(testType, "gamma"))
	if s := p2.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("replacement not registered: %+v", s)
	}
	eventually(t, "re-registration", func() bool {
		_, ok := h.current("gamma")
		return ok && h.count("register", "gamma") == 2
	})
}

// TestNewestSocketWins: of several live sockets of one plugin the newest
// is registered; when it leaves, the next newest takes over; removing an
// older socket never de-registers the newer instance.
func TestNewestSocketWins(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	startWatcher(t, dir, fastOptions(), testType, h)
	owner := func() string { ep, _ := h.current("delta"); return ep }
	a := startPlugin(t, filepath.Join(dir, "delta.1000.sock"), pluginInfo(testType, "delta"))
	a.waitStatus(t)
	b := startPlugin(t, filepath.Join(dir, "delta.2000.sock"), pluginInfo(testType, "delta"))
	b.waitStatus(t)
	eventually(t, "newer socket b registered", func() bool { return owner() == b.path })

	b.stop()
	eventually(t, "older live socket a takes over", func() bool { return owner() == a.path })

	c := startPlugin(t, filepath.Join(dir, "delta.3000.sock"), pluginInfo(testType, "delta"))
	c.waitStatus(t)
	eventually(t, "newest socket c registered", func() bool { return owner() == c.path })
	deregs := h.count("deregister", "delta")

	a.stop()
	consistently(t, "c stays registered when old socket a goes", 200*time.Millisecond, func() bool {
		return owner() == c.path
	})
	if got := h.count("deregister", "delta"); got != deregs {
		t.Errorf("removing a standby socket called DeRegisterPlugin (%d -> %d calls)", deregs, got)
	}
}

// TestRestartRecovery: sockets that exist before Start are registered; a
// socket left by a crashed plugin is removed.
func TestRestartRecovery(t *testing.T) {
	dir := testDir(t)
	live := startPlugin(t, filepath.Join(dir, "eps.sock"), pluginInfo(testType, "eps"))
	nested := startPlugin(t, filepath.Join(dir, "sub", "zeta.sock"), pluginInfo(testType, "zeta"))
	dead := startPlugin(t, filepath.Join(dir, "eta.sock"), pluginInfo(testType, "eta"))
	dead.kill()

	h := newRecordingHandler(t)
	startWatcher(t, dir, fastOptions(), testType, h)
	live.waitStatus(t)
	nested.waitStatus(t)
	eventually(t, "stale socket removed", func() bool { return !fileExists(dead.path) })
	if _, ok := h.current("eta"); ok {
		t.Error("stale plugin was registered")
	}
}

func TestStaleSocketRemoved(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	w := startWatcher(t, dir, fastOptions(), testType, h)
	p := startPlugin(t, filepath.Join(dir, "theta.sock"), pluginInfo(testType, "theta"))
	p.waitStatus(t)

	// The plugin crashes and leaves its socket behind: no file event, but
	// the monitored connection drops and the socket then refuses.
	p.kill()
	eventually(t, "stale socket removed", func() bool { return !fileExists(p.path) })
	eventually(t, "stale plugin de-registered", func() bool { return h.count("deregister", "theta") == 1 })
	if n, _ := testutil.GetCounterMetricValue(w.metrics.StaleRemoved); n != 1 {
		t.Errorf("stale_sockets_removed_total = %v, want 1", n)
	}
}

// TestSlowPluginNotRemoved: GetInfo answers after the RPC timeout for a
// while; the plugin is retried, eventually registered, and never removed.
func TestSlowPluginNotRemoved(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	startWatcher(t, dir, fastOptions(), testType, h)
	p := newPlugin(filepath.Join(dir, "iota.sock"), pluginInfo(testType, "iota"))
	p.delay = func(call int32) time.Duration {
		if call <= 4 {
			return time.Second // beyond RPCTimeout
		}
		return 0
	}
	if err := p.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	if s := p.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("slow plugin not registered: %+v", s)
	}
	if !fileExists(p.path) {
		t.Fatal("slow plugin's socket was removed")
	}
}

// TestGetInfoHangs: a plugin whose GetInfo never returns is retried with
// backoff, is never removed, and does not delay other plugins.
func TestGetInfoHangs(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	startWatcher(t, dir, fastOptions(), testType, h)
	hung := newPlugin(filepath.Join(dir, "kappa.sock"), pluginInfo(testType, "kappa"))
	hung.delay = func(int32) time.Duration { return time.Hour }
	if err := hung.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hung.stop)

	other := startPlugin(t, filepath.Join(dir, "lambda.sock"), pluginInfo(testType, "lambda"))
	other.waitStatus(t)
	eventually(t, "GetInfo retried", func() bool { return hung.getInfo.Load() >= 3 })
	if !fileExists(hung.path) {
		t.Fatal("hanging plugin's socket was removed")
	}
	if h.count("validate", "kappa") != 0 {
		t.Fatal("hanging plugin reached the handler")
	}
}

// TestNonGRPCSocket: a listener that speaks something else is retried and
// never removed; it does not disturb other plugins.
func TestNonGRPCSocket(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	w := startWatcher(t, dir, fastOptions(), testType, h)
	path := filepath.Join(dir, "mu.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	accepted := make(chan struct{}, 100)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
			_ = c.Close()
			accepted <- struct{}{}
		}
	}()
	other := startPlugin(t, filepath.Join(dir, "nu.sock"), pluginInfo(testType, "nu"))
	other.waitStatus(t)
	for i := 0; i < 2; i++ {
		select {
		case <-accepted:
		case <-time.After(waitTimeout):
			t.Fatal("non-gRPC socket was not retried")
		}
	}
	if !fileExists(path) {
		t.Fatal("non-gRPC socket was removed")
	}
	if n, _ := testutil.GetCounterMetricValue(w.metrics.Failures.WithLabelValues(pwmetrics.UnknownType, pwmetrics.ReasonGetInfo)); n < 1 {
		t.Errorf("get_info failures = %v, want >= 1", n)
	}
}

func TestVersionMismatch(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	h.supported = []string{"v2", "v1"}
	startWatcher(t, dir, fastOptions(), testType, h)
	p := startPlugin(t, filepath.Join(dir, "xi.sock"), pluginInfo(testType, "xi", "v9"))
	s := p.waitStatus(t)
	if s.PluginRegistered || !strings.Contains(s.Error, "no common version") {
		t.Fatalf("want rejection naming the version problem, got %+v", s)
	}
	if h.count("register", "xi") != 0 {
		t.Error("RegisterPlugin called after failed validation")
	}

	ok := startPlugin(t, filepath.Join(dir, "omicron.sock"), pluginInfo(testType, "omicron", "v1", "v3"))
	if s := ok.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("plugin with a common version rejected: %+v", s)
	}
}

func TestNameMismatch(t *testing.T) {
	for name, tc := range map[string]struct {
		policy         IdentityPolicy
		wantRegistered bool
	}{
		"reject policy refuses": {IdentityReject, false},
		"warn policy registers": {IdentityWarn, true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := testDir(t)
			h := newRecordingHandler(t)
			opts := fastOptions()
			opts.IdentityPolicy = tc.policy
			w := startWatcher(t, dir, opts, testType, h)
			p := startPlugin(t, filepath.Join(dir, "pi.1234.sock"), pluginInfo(testType, "rho"))
			s := p.waitStatus(t)
			if s.PluginRegistered != tc.wantRegistered {
				t.Fatalf("registered = %v, want %v (%+v)", s.PluginRegistered, tc.wantRegistered, s)
			}
			if !tc.wantRegistered {
				if !strings.Contains(s.Error, "does not carry plugin name") {
					t.Errorf("rejection reason %q does not explain the mismatch", s.Error)
				}
				n, _ := testutil.GetCounterMetricValue(w.metrics.Failures.WithLabelValues(testType, pwmetrics.ReasonIdentity))
				if n != 1 {
					t.Errorf("identity failures = %v, want 1 (no retry of a rejected socket)", n)
				}
			}
		})
	}
}

func TestUnknownPluginType(t *testing.T) {
	dir := testDir(t)
	startWatcher(t, dir, fastOptions(), testType, newRecordingHandler(t))
	p := startPlugin(t, filepath.Join(dir, "sigma.sock"), pluginInfo("OtherPlugin", "sigma"))
	if s := p.waitStatus(t); s.PluginRegistered || !strings.Contains(s.Error, "no handler") {
		t.Fatalf("want rejection for unknown type, got %+v", s)
	}
}

// TestRetryAfterHandlerFailure: RegisterPlugin fails twice; the watcher
// tells the plugin each time and retries until it succeeds.
func TestRetryAfterHandlerFailure(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	h.failRegister = 2
	startWatcher(t, dir, fastOptions(), testType, h)
	p := startPlugin(t, filepath.Join(dir, "tau.sock"), pluginInfo(testType, "tau"))
	for i := 0; i < 2; i++ {
		if s := p.waitStatus(t); s.PluginRegistered || !strings.Contains(s.Error, "consumer not ready") {
			t.Fatalf("attempt %d: want failure status, got %+v", i+1, s)
		}
	}
	if s := p.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("want registered after retries, got %+v", s)
	}
}

func TestNestedDirectory(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	startWatcher(t, dir, fastOptions(), testType, h)
	nestedDir := filepath.Join(dir, "a", "b", "c")
	p := startPlugin(t, filepath.Join(nestedDir, "upsilon.sock"), pluginInfo(testType, "upsilon"))
	if s := p.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("nested plugin not registered: %+v", s)
	}
	// Removing the whole subtree de-registers the plugin.
	p.srv.Stop()
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "de-registration after subtree removal", func() bool { return h.count("deregister", "upsilon") == 1 })
}

func TestNonSocketFile(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	w := startWatcher(t, dir, fastOptions(), testType, h)
	if err := os.WriteFile(filepath.Join(dir, "phi.sock"), []byte("not a socket"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "chi.sock"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := startPlugin(t, filepath.Join(testDir(t), "psi.sock"), pluginInfo(testType, "psi"))
	if err := os.Symlink(target.path, filepath.Join(dir, "psi.sock")); err != nil {
		t.Fatal(err)
	}
	marker := startPlugin(t, filepath.Join(dir, "omega.sock"), pluginInfo(testType, "omega"))
	marker.waitStatus(t)
	if paths := w.dsw.Paths(); len(paths) != 1 {
		t.Fatalf("desired state = %v, want only the real socket", paths)
	}
	if target.getInfo.Load() != 0 {
		t.Error("a symlink to a socket was followed")
	}
}

// TestRenameEvents: a socket moved out of the tree de-registers; one moved
// in registers.
func TestRenameEvents(t *testing.T) {
	dir := testDir(t)
	outside := testDir(t)
	h := newRecordingHandler(t)
	startWatcher(t, dir, fastOptions(), testType, h)
	p := startPlugin(t, filepath.Join(dir, "ren.sock"), pluginInfo(testType, "ren"))
	p.waitStatus(t)
	if err := os.Rename(p.path, filepath.Join(outside, "ren.sock")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "de-registration after move out", func() bool { return h.count("deregister", "ren") == 1 })
	if err := os.Rename(filepath.Join(outside, "ren.sock"), p.path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "registration after move in", func() bool { return h.count("register", "ren") == 2 })
}
