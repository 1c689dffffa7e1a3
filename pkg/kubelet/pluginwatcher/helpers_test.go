package pluginwatcher

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// testDir returns a short directory under /tmp: unix socket paths are
// limited to 108 bytes, which t.TempDir() can exceed.
func testDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// testPlugin is a minimal Registration server written for these tests; it
// answers NotifyRegistrationStatus at once (upstream's example plugin blocks).
type testPlugin struct {
	registerapi.UnimplementedRegistrationServer
	path     string
	info     *registerapi.PluginInfo
	lis      *net.UnixListener
	srv      *grpc.Server
	getInfo  atomic.Int32
	delay    func(call int32) time.Duration // GetInfo delay per call (1-based)
	statuses chan *registerapi.RegistrationStatus
}

func startPlugin(t testing.TB, path string, info *registerapi.PluginInfo) *testPlugin {
	t.Helper()
	p := newPlugin(path, info)
	if err := p.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p
}

func newPlugin(path string, info *registerapi.PluginInfo) *testPlugin {
	return &testPlugin{path: path, info: info, statuses: make(chan *registerapi.RegistrationStatus, 100)}
}

func (p *testPlugin) listen() error {
	if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
		return err
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.path, Net: "unix"})
	if err != nil {
		return err
	}
	p.lis = lis
	p.srv = grpc.NewServer()
	registerapi.RegisterRegistrationServer(p.srv, p)
	go func() { _ = p.srv.Serve(lis) }()
	return nil
}

// stop ends the server and removes the socket, as a well-behaved plugin does.
func (p *testPlugin) stop() {
	if p.srv != nil {
		p.srv.Stop()
	}
	_ = os.Remove(p.path)
}

// kill ends the server but leaves the socket file behind (a crash).
func (p *testPlugin) kill() {
	p.lis.SetUnlinkOnClose(false)
	p.srv.Stop()
}

func (p *testPlugin) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	n := p.getInfo.Add(1)
	if p.delay != nil {
		select {
		case <-time.After(p.delay(n)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.info, nil
}

func (p *testPlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	select {
	case p.statuses <- s:
	default:
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// waitStatus returns the next status the plugin received.
func (p *testPlugin) waitStatus(t testing.TB) *registerapi.RegistrationStatus {
	t.Helper()
	select {
	case s := <-p.statuses:
		return s
	case <-time.After(waitTimeout):
		t.Fatalf("plugin %s got no registration status", p.path)
		return nil
	}
}

func pluginInfo(typ, name string, versions ...string) *registerapi.PluginInfo {
	if len(versions) == 0 {
		versions = []string{"v1"}
	}
	return &registerapi.PluginInfo{Type: typ, Name: name, SupportedVersions: versions}
}

// call is one handler invocation.
type call struct {
	op, name, endpoint string
}

// recordingHandler records calls and checks the per-name serialisation
// promised by Handler.
type recordingHandler struct {
	t         testing.TB
	mu        sync.Mutex
	calls     []call
	active    map[string]bool
	supported []string
	// failRegister makes the first N RegisterPlugin calls fail.
	failRegister int
	// registered is the current endpoint per name, as a consumer keeps it.
	registered map[string]string
}

func newRecordingHandler(t testing.TB) *recordingHandler {
	return &recordingHandler{t: t, active: map[string]bool{}, registered: map[string]string{}}
}

func (h *recordingHandler) enter(op, name, endpoint string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.active[name] {
		h.t.Errorf("concurrent handler calls for plugin %q", name)
	}
	h.active[name] = true
	h.calls = append(h.calls, call{op, name, endpoint})
}

func (h *recordingHandler) leave(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active[name] = false
}

func (h *recordingHandler) ValidatePlugin(_ context.Context, name, endpoint string, versions []string) error {
	h.enter("validate", name, endpoint)
	defer h.leave(name)
	if h.supported == nil {
		return nil
	}
	_, err := NegotiateVersion(versions, h.supported)
	return err
}

func (h *recordingHandler) RegisterPlugin(_ context.Context, name, endpoint string, _ []string, _ *time.Duration) error {
	h.enter("register", name, endpoint)
	defer h.leave(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failRegister > 0 {
		h.failRegister--
		return errors.New("consumer not ready")
	}
	h.registered[name] = endpoint
	return nil
}

func (h *recordingHandler) DeRegisterPlugin(_ context.Context, name, endpoint string) {
	h.enter("deregister", name, endpoint)
	defer h.leave(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.registered[name] == endpoint {
		delete(h.registered, name)
	}
}

func (h *recordingHandler) current(name string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.registered[name]
	return e, ok
}

func (h *recordingHandler) count(op, name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.calls {
		if c.op == op && (name == "" || c.name == name) {
			n++
		}
	}
	return n
}

// fastOptions keep retries and timeouts short so that tests finish quickly.
func fastOptions() Options {
	return Options{
		DialTimeout:   200 * time.Millisecond,
		RPCTimeout:    200 * time.Millisecond,
		RetryBase:     10 * time.Millisecond,
		RetryMax:      100 * time.Millisecond,
		StaleAttempts: 3,
		StaleGrace:    50 * time.Millisecond,
		ThrottleRate:  1000,
		ThrottleBurst: 1000,
	}
}

// startWatcher runs a watcher on dir with h for typ until the test ends.
func startWatcher(t testing.TB, dir string, opts Options, typ string, h Handler) *watcher {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	return startWatcherWithLogger(t, logger, dir, opts, typ, h)
}

// startWatcherWithLogger is startWatcher with the watcher's logger.
func startWatcherWithLogger(t testing.TB, logger klog.Logger, dir string, opts Options, typ string, h Handler) *watcher {
	t.Helper()
	if opts.MetricsRegistry == nil {
		opts.MetricsRegistry = metrics.NewKubeRegistry()
	}
	w, err := newWatcher(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		w.AddHandler(typ, h)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	if err := w.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); w.wait() })
	return w
}

// eventually polls cond until it holds or a bounded wait expires.
// waitTimeout bounds how long a test waits for something that happens in
// well under a second on an idle machine. It is no latency check (those are
// benchmarks): it is long enough for a 2-core machine running -race tests
// of other packages beside this one.
const waitTimeout = 30 * time.Second

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// consistently checks that cond holds for the whole of d: it is checked
// at once, every 5 ms, and once more after d has passed, so that even on a
// machine too slow to poll during d it is seen at both ends of the window
// (a loop that only polls while time is left passes without a single
// check when it starts late). When the checks were too sparse to cover the
// window, the test log says how sparse.
func consistently(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	checks, last := 0, start
	var longestGap time.Duration
	for {
		now := time.Now()
		longestGap = max(longestGap, now.Sub(last))
		last = now
		if !cond() {
			t.Fatalf("condition broke after %v (check %d of a %v window): %s", now.Sub(start), checks+1, d, what)
		}
		checks++
		if !now.Before(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if checks < 2 || longestGap > d/2 {
		t.Logf("consistently %q: only %d checks over %v, up to %v apart (slow machine): a break shorter than that may have been missed",
			what, checks, time.Since(start), longestGap)
	}
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
