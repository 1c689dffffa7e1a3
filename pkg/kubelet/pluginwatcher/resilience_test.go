package pluginwatcher

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch/dirwatchtest"
)

// flooder is one plugin that serves the Registration service on many
// sockets through a single gRPC server.
type flooder struct {
	registerapi.UnimplementedRegistrationServer
	dir  string
	name string
	srv  *grpc.Server
	mu   sync.Mutex
	lis  []net.Listener
}

func newFlooder(t testing.TB, dir, name string) *flooder {
	f := &flooder{dir: dir, name: name, srv: grpc.NewServer()}
	registerapi.RegisterRegistrationServer(f.srv, f)
	t.Cleanup(f.srv.Stop)
	return f
}

func (f *flooder) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return pluginInfo(testType, f.name), nil
}

func (f *flooder) NotifyRegistrationStatus(context.Context, *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	return &registerapi.RegistrationStatusResponse{}, nil
}

// add creates socket number i following the <name>.<timestamp> convention.
func (f *flooder) add(i int) (string, error) {
	path := filepath.Join(f.dir, fmt.Sprintf("%s.%d.sock", f.name, i))
	lis, err := net.Listen("unix", path)
	if err != nil {
		return "", err
	}
	go func() { _ = f.srv.Serve(lis) }()
	f.mu.Lock()
	f.lis = append(f.lis, lis)
	f.mu.Unlock()
	return path, nil
}

// dropOldest closes (and unlinks) the oldest socket still open.
func (f *flooder) dropOldest() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.lis) > 0 {
		_ = f.lis[0].Close()
		f.lis = f.lis[1:]
	}
}

// TestFlood: one plugin creates sockets much faster than its token bucket
// allows. It is throttled, its handler sees a bounded number of calls, the
// newest socket ends up registered, and another plugin is not held up.
func TestFlood(t *testing.T) {
	dir := testDir(t)
	h := newRecordingHandler(t)
	opts := fastOptions()
	opts.ThrottleRate, opts.ThrottleBurst = 5, 2
	w := startWatcher(t, dir, opts, testType, h)

	f := newFlooder(t, dir, "flood")
	start := time.Now()
	var last string
	for i := 0; i < 200; i++ {
		p, err := f.add(i)
		if err != nil {
			t.Fatal(err)
		}
		last = p
	}
	good := startPlugin(t, filepath.Join(dir, "calm.sock"), pluginInfo(testType, "calm"))
	if s := good.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("well-behaved plugin not registered during flood: %+v", s)
	}
	eventually(t, "newest flood socket registered", func() bool {
		ep, _ := h.current("flood")
		return ep == last
	})
	allowed := opts.ThrottleBurst + int(opts.ThrottleRate*time.Since(start).Seconds()) + 1
	if n := h.count("register", "flood"); n > allowed {
		t.Errorf("flooding plugin registered %d times, token bucket allows %d", n, allowed)
	}
	if n, _ := testutil.GetCounterMetricValue(w.metrics.Throttled); n < 100 {
		t.Errorf("throttled_total = %v, want most of the 200 sockets", n)
	}
}

// TestUnwatchableSubdirectory: a subdirectory that vanishes while it is
// being added and one that is a dangling symlink do not abort the scan;
// sockets after them (in walk order) are still found.
func TestUnwatchableSubdirectory(t *testing.T) {
	dir := testDir(t)
	victim := filepath.Join(dir, "a-vanishing")
	if err := os.MkdirAll(filepath.Join(victim, "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/plugins", filepath.Join(dir, "b-dangling")); err != nil {
		t.Fatal(err)
	}
	c := startPlugin(t, filepath.Join(dir, "c.sock"), pluginInfo(testType, "c"))
	e := startPlugin(t, filepath.Join(dir, "d", "e.sock"), pluginInfo(testType, "e"))

	fsw, err := dirwatchtest.NewInjectFS()
	if err != nil {
		t.Fatal(err)
	}
	fsw.BeforeAdd(func(d string) {
		if d == victim {
			_ = os.RemoveAll(victim) // removed while it is added
		}
	})
	opts := withRegistry(fastOptions())
	opts.newDirWatcher = fsw.New
	w, err := newWatcher(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.AddHandler(testType, newRecordingHandler(t))
	startStarted(t, w)
	c.waitStatus(t)
	e.waitStatus(t)
	if n, _ := testutil.GetCounterMetricValue(w.metrics.WatchErrors); n < 1 {
		t.Errorf("watch_errors_total = %v, want >= 1", n)
	}
}

func withRegistry(o Options) Options {
	o.MetricsRegistry = metrics.NewKubeRegistry()
	return o
}

func startStarted(t *testing.T, w *watcher) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	if err := w.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); w.wait() })
}

// TestNodeEvents: with a recorder and node reference, registrations and
// rejections become Node events.
func TestNodeEvents(t *testing.T) {
	dir := testDir(t)
	rec := record.NewFakeRecorder(100)
	opts := fastOptions()
	opts.Recorder = rec
	opts.NodeRef = &v1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"}
	opts.IdentityPolicy = IdentityReject
	startWatcher(t, dir, opts, testType, newRecordingHandler(t))

	good := startPlugin(t, filepath.Join(dir, "ok.sock"), pluginInfo(testType, "ok"))
	good.waitStatus(t)
	bad := startPlugin(t, filepath.Join(dir, "liar.sock"), pluginInfo(testType, "other"))
	bad.waitStatus(t)
	want := map[string]bool{report.EventPluginRegistered: false, report.EventPluginRejected: false}
	for seen := 0; seen < len(want); {
		select {
		case ev := <-rec.Events:
			for reason, done := range want {
				if !done && strings.Contains(ev, " "+reason+" ") {
					want[reason] = true
					seen++
				}
			}
		case <-time.After(waitTimeout):
			t.Fatalf("missing events: %v", want)
		}
	}
}
