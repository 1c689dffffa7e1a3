package handlers

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// regPlugin is a registration server written for these tests, on a real
// unix socket; with a service socket of its own when it has an endpoint.
type regPlugin struct {
	registerapi.UnimplementedRegistrationServer
	info     *registerapi.PluginInfo
	lis      *net.UnixListener
	srv      *grpc.Server
	statuses chan *registerapi.RegistrationStatus
}

func startRegPlugin(t *testing.T, path string, info *registerapi.PluginInfo) *regPlugin {
	t.Helper()
	p := &regPlugin{info: info, statuses: make(chan *registerapi.RegistrationStatus, 100)}
	p.lis, p.srv = serveGRPC(t, path)
	registerapi.RegisterRegistrationServer(p.srv, p)
	go func() { _ = p.srv.Serve(p.lis) }()
	return p
}

// serveGRPC listens on path and returns a server for it that stops, and
// removes the socket, when the test ends. The caller registers services
// and serves.
func serveGRPC(t *testing.T, path string) (*net.UnixListener, *grpc.Server) {
	t.Helper()
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	t.Cleanup(srv.Stop)
	return lis, srv
}

// kill ends a server but leaves its socket file behind, as a crash does.
func kill(lis *net.UnixListener, srv *grpc.Server) {
	lis.SetUnlinkOnClose(false)
	srv.Stop()
}

func (p *regPlugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return p.info, nil
}

func (p *regPlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	select {
	case p.statuses <- s:
	default:
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (p *regPlugin) waitStatus(t *testing.T) *registerapi.RegistrationStatus {
	t.Helper()
	select {
	case s := <-p.statuses:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("the plugin got no registration status")
		return nil
	}
}

// call is one call that reached the upstream handler.
type call struct {
	op, endpoint string
	versions     []string
}

// recorder passes every call on to the upstream handler and records it.
type recorder struct {
	upstream pluginwatcher.Handler
	mu       sync.Mutex
	calls    []call
}

func (r *recorder) add(c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorder) ops(op string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	r.add(call{"validate", endpoint, versions})
	return r.upstream.ValidatePlugin(ctx, name, endpoint, versions)
}

func (r *recorder) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, timeout *time.Duration) error {
	r.add(call{"register", endpoint, versions})
	return r.upstream.RegisterPlugin(ctx, name, endpoint, versions, timeout)
}

func (r *recorder) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	r.add(call{"deregister", endpoint, nil})
	r.upstream.DeRegisterPlugin(ctx, name, endpoint)
}

// The watcher's stale-socket rule in startDRAWatcher.
const (
	staleAttempts = 3
	staleGrace    = 50 * time.Millisecond
)

// newDRAManager starts upstream's DRA plugin manager, the handler the
// kubelet's DRA manager hands out after Start, for node-1. With a nil
// client it never wipes ResourceSlices. What it logs goes to logs too,
// unless that is nil.
func newDRAManager(t *testing.T, client kubernetes.Interface, wipingDelay time.Duration, logs *logCapture) *draplugin.DRAPluginManager {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	if logs != nil {
		ctx = logs.context(ctx)
	}
	getNode := func(context.Context) (*v1.Node, error) {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-1-uid"}}, nil
	}
	pm := draplugin.NewDRAPluginManager(ctx, client, getNode, nil, wipingDelay)
	t.Cleanup(pm.Stop)
	return pm
}

// startDRAWatcher runs nodeplug's watcher on dir, with h for DRAPlugin,
// quick retries and stale-socket removal (staleAttempts refusals over
// staleGrace), and the Reject identity policy. What it logs goes to logs
// too, unless that is nil.
func startDRAWatcher(t *testing.T, dir string, h pluginwatcher.Handler, logs *logCapture) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	if logs != nil {
		ctx = logs.context(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w, err := pluginwatcher.NewWatcher(dir, pluginwatcher.Options{
		RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		StaleAttempts: staleAttempts, StaleGrace: staleGrace,
		IdentityPolicy:  pluginwatcher.IdentityReject,
		MetricsRegistry: metrics.NewKubeRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.AddHandler(pluginwatcher.DRAPlugin, h)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
}
