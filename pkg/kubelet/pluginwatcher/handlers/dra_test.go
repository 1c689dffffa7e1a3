package handlers

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2/ktesting"
	pluginmanagercache "k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// fakeContainerManager returns fixed registration handlers.
type fakeContainerManager map[string]pluginmanagercache.PluginHandler

func (m fakeContainerManager) GetPluginRegistrationHandlers() map[string]pluginmanagercache.PluginHandler {
	return m
}

// upstreamDRA stands in for upstream's DRA plugin manager: a pointer type,
// so that a nil one can be told apart.
type upstreamDRA struct {
	pluginwatcher.HandlerFuncs
}

// TestWaitForDRA: the DRA manager's handler is taken from the container
// manager only once it has started, and an absent or unset one is an
// error, not a handler that would crash on the first registration.
func TestWaitForDRA(t *testing.T) {
	var validated []string
	upstream := &upstreamDRA{pluginwatcher.HandlerFuncs{Validate: func(_ context.Context, name, _ string, versions []string) error {
		validated = append(validated, name+" "+strings.Join(versions, ","))
		return nil
	}}}
	started := func(context.Context) error { return nil }
	never := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for name, tc := range map[string]struct {
		cm      fakeContainerManager
		started func(context.Context) error
		wantErr string
	}{
		"started: the DRA manager's handler": {cm: fakeContainerManager{pluginwatcher.DRAPlugin: upstream}, started: started},
		"started without a DRA handler":      {cm: fakeContainerManager{}, started: started, wantErr: "offers no DRA handler"},
		"started, DRA handler still unset":   {cm: fakeContainerManager{pluginwatcher.DRAPlugin: (*upstreamDRA)(nil)}, started: started, wantErr: "offers no DRA handler"},
		"never started":                      {cm: fakeContainerManager{pluginwatcher.DRAPlugin: upstream}, started: never, wantErr: "deadline exceeded"},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			h, err := WaitForDRA(ctx, tc.cm, DRAOptions{Started: tc.started})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("WaitForDRA = %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			validated = nil
			if err := h.ValidatePlugin(ctx, "gpu.example.com", "/dra.sock", []string{"v1.DRAPlugin", "v1.DRAResourceHealth"}); err != nil {
				t.Fatal(err)
			}
			if want := []string{"gpu.example.com v1.DRAPlugin,v1.DRAResourceHealth"}; len(validated) != 1 || validated[0] != want[0] {
				t.Errorf("upstream handler saw %q, want %q", validated, want)
			}
		})
	}
}

// TestHandlerPolicies: the DRA handler asks for upstream's DRA semantics,
// the device plugin handler for several instances per resource, and the
// CSI handler for the default (one instance per driver, as upstream's CSI
// handler keeps).
func TestHandlerPolicies(t *testing.T) {
	for name, tc := range map[string]struct {
		h    pluginwatcher.Handler
		want pluginwatcher.Policy
	}{
		"DRAPlugin":    {DRA(&upstreamDRA{}), pluginwatcher.Policy{AllInstances: true, KeepRegisteredWhenRefused: true}},
		"DevicePlugin": {NewDevicePlugin(DevicePluginOptions{}), pluginwatcher.Policy{AllInstances: true}},
		"CSIPlugin":    {CSI(), pluginwatcher.Policy{}},
	} {
		t.Run(name, func(t *testing.T) {
			var got pluginwatcher.Policy
			if p, ok := tc.h.(pluginwatcher.PolicyHandler); ok {
				got = p.Policy()
			}
			if got != tc.want {
				t.Errorf("Policy() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestWaitServing: the container manager counts as started once a gRPC
// server answers on the device manager's socket; a missing socket, or a
// socket file nobody listens on (left by the previous kubelet), does not.
func TestWaitServing(t *testing.T) {
	for name, tc := range map[string]struct {
		setup func(t *testing.T, path string)
		want  bool
	}{
		"no socket": {setup: func(*testing.T, string) {}},
		"socket file without a listener": {setup: func(t *testing.T, path string) {
			lis := listenUnix(t, path)
			lis.SetUnlinkOnClose(false)
			_ = lis.Close()
		}},
		"gRPC server": {want: true, setup: func(t *testing.T, path string) {
			srv := grpc.NewServer()
			lis := listenUnix(t, path)
			go func() { _ = srv.Serve(lis) }()
			t.Cleanup(srv.Stop)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(shortDir(t, "dm"), "kubelet.sock")
			tc.setup(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := WaitServing(ctx, path, 20*time.Millisecond)
			if got := err == nil; got != tc.want {
				t.Errorf("WaitServing = %v, want serving=%v", err, tc.want)
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("WaitServing = %v, want it to wrap the context's error", err)
			}
		})
	}
}

func listenUnix(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	return lis
}
