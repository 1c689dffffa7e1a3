package pluginwatcher

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
)

// Benchmarks run nodeplug's watcher and upstream's plugin manager
// (k8s.io/kubernetes/pkg/kubelet/pluginmanager) side by side, with the same
// handler and the same minimal Registration server. Suggested invocations:
//
//	go test -run XXX -bench 'Latency' -benchtime 100x ./pkg/kubelet/pluginwatcher
//	go test -run XXX -bench 'Burst500' -benchtime 3x ./pkg/kubelet/pluginwatcher
//	go test -run XXX -bench 'Burst1000' -benchtime 3x -count 3 ./pkg/kubelet/pluginwatcher
//	go test -run XXX -bench 'Flood' -benchtime 1x ./pkg/kubelet/pluginwatcher
//	go test -run XXX -bench 'HostileSockets' -benchtime 100x ./pkg/kubelet/pluginwatcher

const benchType = "BenchPlugin"

// benchHandler is the handler given to both implementations. It records
// when RegisterPlugin is entered for each plugin name.
type benchHandler struct {
	mu         sync.Mutex
	registered map[string]time.Time
	waiters    map[string]chan time.Time
	deregs     atomic.Int64
}

func newBenchHandler() *benchHandler {
	return &benchHandler{registered: map[string]time.Time{}, waiters: map[string]chan time.Time{}}
}

func (h *benchHandler) ValidatePlugin(context.Context, string, string, []string) error { return nil }

func (h *benchHandler) RegisterPlugin(_ context.Context, name, _ string, _ []string, _ *time.Duration) error {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.registered[name]; ok {
		return nil
	}
	h.registered[name] = now
	if ch := h.waiters[name]; ch != nil {
		ch <- now
	}
	return nil
}

func (h *benchHandler) DeRegisterPlugin(context.Context, string, string) { h.deregs.Add(1) }

// expect returns a channel that receives the time RegisterPlugin(name) ran.
func (h *benchHandler) expect(name string) chan time.Time {
	ch := make(chan time.Time, 1)
	h.mu.Lock()
	h.waiters[name] = ch
	h.mu.Unlock()
	return ch
}

// benchTypes are the plugin types both implementations get the bench
// handler for: the generic one and the two the victim benchmarks use.
var benchTypes = []string{benchType, CSIPlugin, DRAPlugin}

// benchServer is one gRPC Registration server for many sockets; it answers
// GetInfo with the name bound to the socket the request arrived on, its
// plugin type and its supported versions.
type benchServer struct {
	registerapi.UnimplementedRegistrationServer
	srv        *grpc.Server
	pluginType string
	versions   []string
	mu         sync.Mutex
	names      map[string]string
	lis        map[string]net.Listener
}

func newBenchServer(b testing.TB) *benchServer {
	return newTypedBenchServer(b, benchType, "v1")
}

// newTypedBenchServer returns a benchServer whose plugins are of
// pluginType and list versions (for a DRA driver, its gRPC services).
func newTypedBenchServer(b testing.TB, pluginType string, versions ...string) *benchServer {
	s := &benchServer{
		srv: grpc.NewServer(), pluginType: pluginType, versions: versions,
		names: map[string]string{}, lis: map[string]net.Listener{},
	}
	registerapi.RegisterRegistrationServer(s.srv, s)
	b.Cleanup(s.srv.Stop)
	return s
}

func (s *benchServer) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	p, _ := peer.FromContext(ctx)
	s.mu.Lock()
	name := s.names[p.LocalAddr.String()]
	s.mu.Unlock()
	return &registerapi.PluginInfo{Type: s.pluginType, Name: name, SupportedVersions: s.versions}, nil
}

func (s *benchServer) NotifyRegistrationStatus(context.Context, *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	return &registerapi.RegistrationStatusResponse{}, nil
}

// listen binds path for plugin name and returns when the listener is bound.
func (s *benchServer) listen(path, name string) (time.Time, error) {
	s.mu.Lock()
	s.names[path] = name
	s.mu.Unlock()
	lis, err := net.Listen("unix", path)
	bound := time.Now()
	if err != nil {
		return bound, err
	}
	s.mu.Lock()
	s.lis[path] = lis
	s.mu.Unlock()
	go func() { _ = s.srv.Serve(lis) }()
	return bound, nil
}

func (s *benchServer) close(path string) {
	s.mu.Lock()
	lis := s.lis[path]
	delete(s.lis, path)
	delete(s.names, path)
	s.mu.Unlock()
	if lis != nil {
		_ = lis.Close()
	}
}

// implementation starts one registration implementation on dir.
type implementation func(b testing.TB, ctx context.Context, dir string, h *benchHandler)

func runNodeplug(b testing.TB, ctx context.Context, dir string, h *benchHandler) {
	w, err := newWatcher(dir, Options{MetricsRegistry: metrics.NewKubeRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	for _, typ := range benchTypes {
		w.AddHandler(typ, h)
	}
	ctx, cancel := context.WithCancel(ctx)
	if err := w.Start(ctx); err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); w.wait(); debugDump = func() string { return "" } })
	debugDump = func() string {
		return fmt.Sprintf("dsw=%v asw=%+v queue=%d parked=%d", w.dsw.Paths(), w.asw.List(), w.queue.Len(), w.throttle.ParkedCount())
	}
}

// debugDump describes the running nodeplug watcher's state when a
// benchmark plugin fails to register; empty for upstream.
var debugDump = func() string { return "" }

func runUpstream(b testing.TB, ctx context.Context, dir string, h *benchHandler) {
	pm := pluginmanager.NewPluginManager(dir, &record.FakeRecorder{})
	for _, typ := range benchTypes {
		pm.AddHandler(typ, h)
	}
	ready := config.NewSourcesReady(func(sets.Set[string]) bool { return true })
	go pm.Run(ctx, ready, ctx.Done())
	time.Sleep(100 * time.Millisecond) // let its watcher start
}

var implementations = []struct {
	name  string
	start implementation
}{
	{"nodeplug", runNodeplug},
	{"upstream", runUpstream},
}

// benchContext returns a context whose logger writes V(0) lines to out,
// and routes global klog calls there too.
func benchContext(b testing.TB, out io.Writer) context.Context {
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(0)))
	klog.SetLogger(logger)
	b.Cleanup(klog.ClearLogger)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	b.Cleanup(cancel)
	return ctx
}

// benchDir prefers tmpfs: on this project's VMs bind(2) of a unix socket on
// the ext4 /tmp costs about 1 ms, which would measure the file system rather
// than the watcher (both implementations get the same directory type).
func benchDir(b testing.TB) string {
	base := "/dev/shm"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "pwb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func reportLatency(b *testing.B, prefix string, ds []time.Duration) {
	b.ReportMetric(float64(percentile(ds, 0.50))/1e6, prefix+"p50-ms")
	b.ReportMetric(float64(percentile(ds, 0.99))/1e6, prefix+"p99-ms")
}

// openLoop creates one plugin socket every interval, without waiting for
// earlier ones to register (so that samples are not phase-locked to a
// periodic reconciler), until count sockets were created or stop is
// closed. It returns the registration latency of each, measured from its
// listener being bound to RegisterPlugin, and removes each socket once its
// plugin is registered.
func openLoop(b testing.TB, s *benchServer, h *benchHandler, dir, prefix string, interval time.Duration, count int, stop <-chan struct{}) []time.Duration {
	return openLoopWithin(b, s, h, dir, prefix, interval, count, stop, 30*time.Second)
}

// openLoopWithin is openLoop with the time each plugin may take to
// register before the benchmark fails.
func openLoopWithin(b testing.TB, s *benchServer, h *benchHandler, dir, prefix string, interval time.Duration, count int, stop <-chan struct{}, within time.Duration) []time.Duration {
	type sample struct {
		path  string
		bound time.Time
		ch    chan time.Time
	}
	samples := make(chan sample, 1024)
	var lat []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sm := range samples {
			select {
			case t := <-sm.ch:
				lat = append(lat, t.Sub(sm.bound))
			case <-time.After(within):
				b.Errorf("plugin %s not registered within %v: %s", sm.path, within, debugDump())
			}
			s.close(sm.path)
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; i < count; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ch := h.expect(name)
		path := filepath.Join(dir, name+".sock")
		bound, err := s.listen(path, name)
		if err != nil {
			b.Fatal(err)
		}
		samples <- sample{path, bound, ch}
		select {
		case <-tick.C:
		case <-stop:
			i = count
		}
	}
	close(samples)
	<-done
	return lat
}

// BenchmarkRegistrationLatency: from the plugin's listener being bound to
// the handler's RegisterPlugin; one plugin created every 37 ms.
func BenchmarkRegistrationLatency(b *testing.B) {
	for _, impl := range implementations {
		b.Run(impl.name, func(b *testing.B) {
			dir := benchDir(b)
			h := newBenchHandler()
			impl.start(b, benchContext(b, io.Discard), dir, h)
			s := newBenchServer(b)
			b.ResetTimer()
			lat := openLoop(b, s, h, dir, "lat", 37*time.Millisecond, b.N, nil)
			b.StopTimer()
			reportLatency(b, "", lat)
		})
	}
}
