package handlers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	dpapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	dpserver "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// fakeDeviceManager stands in for the device manager behind upstream's real
// v1beta1 registration server (dpserver.NewServer): it records what the
// server reports and, like upstream's ManagerImpl.PluginConnected, keeps
// several plugin sockets per resource and refuses one that is connected
// already.
type fakeDeviceManager struct {
	mu           sync.Mutex
	sockets      map[string][]string // resource -> connected plugin sockets, oldest first
	connects     map[string]int      // plugin socket -> PluginConnected calls
	devices      map[string]int
	disconnected map[string]bool
}

func newFakeDeviceManager() *fakeDeviceManager {
	return &fakeDeviceManager{sockets: map[string][]string{}, connects: map[string]int{}, devices: map[string]int{}, disconnected: map[string]bool{}}
}

func (m *fakeDeviceManager) CleanupPluginDirectory(klog.Logger, string) error { return nil }

func (m *fakeDeviceManager) PluginConnected(_ context.Context, r string, p dpserver.DevicePlugin) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.connects[p.SocketPath()]++
	if slices.Contains(m.sockets[r], p.SocketPath()) {
		return fmt.Errorf("device plugin already connected: %s", p.SocketPath())
	}
	m.sockets[r] = append(m.sockets[r], p.SocketPath())
	return nil
}

func (m *fakeDeviceManager) PluginDisconnected(_ klog.Logger, r string, socket string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sockets[r] = slices.DeleteFunc(m.sockets[r], func(s string) bool { return s == socket })
	m.disconnected[r] = true
}

func (m *fakeDeviceManager) PluginListAndWatchReceiver(_ klog.Logger, r string, resp *dpapi.ListAndWatchResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.devices[r] = len(resp.Devices)
}

// snapshot returns the plugin socket of r connected last, its device
// count, and whether a plugin of r was disconnected.
func (m *fakeDeviceManager) snapshot(r string) (string, int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := ""
	if s := m.sockets[r]; len(s) > 0 {
		last = s[len(s)-1]
	}
	return last, m.devices[r], m.disconnected[r]
}

// instances returns the connected plugin sockets of r, oldest first, and
// how often the device manager was asked to connect each.
func (m *fakeDeviceManager) instances(r string) ([]string, map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sockets[r]), maps.Clone(m.connects)
}

func shortDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDevicePluginThroughDeviceManager runs upstream's device-plugin stub
// (the code behind test/images/sample-device-plugin) in plugin-watcher
// mode, with its sample plugin's socket name "dp.<unix time>", against
// nodeplug's watcher; the DevicePlugin handler forwards it to upstream's
// real device-manager registration server. The device manager connects,
// receives the devices, and drops the plugin when it stops.
func TestDevicePluginThroughDeviceManager(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	dm := newFakeDeviceManager()
	kubeletSock := filepath.Join(shortDir(t, "dm"), "kubelet.sock")
	srv, err := dpserver.NewServer(logger, kubeletSock, dm, dm)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(logger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(logger) })

	regDir := shortDir(t, "reg")
	w, err := pluginwatcher.NewWatcher(regDir, pluginwatcher.Options{MetricsRegistry: metrics.NewKubeRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	w.AddHandler(pluginwatcher.DevicePlugin, NewDevicePlugin(DevicePluginOptions{KubeletSocket: kubeletSock}))
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}

	const resource = "example.com/resource"
	devs := []*dpapi.Device{{ID: "dev-1", Health: dpapi.Healthy}, {ID: "dev-2", Health: dpapi.Healthy}}
	sock := filepath.Join(regDir, fmt.Sprintf("dp.%d", time.Now().Unix()))
	stub := dpserver.NewDevicePluginStub(logger, devs, sock, resource, false, false)
	if err := stub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "device manager connected with both devices", func() bool {
		s, n, _ := dm.snapshot(resource)
		return s == sock && n == 2
	})

	if err := stub.Stop(logger); err != nil {
		t.Fatal(err)
	}
	eventually(t, "device manager dropped the stopped plugin", func() bool {
		_, _, gone := dm.snapshot(resource)
		return gone
	})
}

func TestDevicePluginValidate(t *testing.T) {
	h := NewDevicePlugin(DevicePluginOptions{KubeletSocket: "/var/lib/kubelet/device-plugins/kubelet.sock"})
	for name, tc := range map[string]struct {
		plugin, endpoint string
		versions         []string
		wantErr          string
	}{
		"valid":                        {"example.com/gpu", "/var/lib/kubelet/plugins_registry/gpu.sock", []string{"v1beta1"}, ""},
		"endpoint outside socket dir":  {"example.com/gpu", "/run/gpu/dp.sock", []string{"v1alpha", "v1beta1"}, ""},
		"wrong version":                {"example.com/gpu", "/run/dp.sock", []string{"v1alpha"}, "no common version"},
		"no versions":                  {"example.com/gpu", "/run/dp.sock", nil, "no common version"},
		"not an extended resource":     {"gpu", "/run/dp.sock", []string{"v1beta1"}, "extended resource"},
		"native resource name":         {"cpu", "/run/dp.sock", []string{"v1beta1"}, "extended resource"},
		"kubernetes.io domain refused": {"kubernetes.io/gpu", "/run/dp.sock", []string{"v1beta1"}, "extended resource"},
		"relative endpoint":            {"example.com/gpu", "dp.sock", []string{"v1beta1"}, "absolute"},
	} {
		t.Run(name, func(t *testing.T) {
			err := h.ValidatePlugin(context.Background(), tc.plugin, tc.endpoint, tc.versions)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("ValidatePlugin = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestCSIBeforeInit: until the kubelet initialised its CSI volume plugin,
// the CSI handler refuses with a retriable error instead of crashing.
func TestCSIBeforeInit(t *testing.T) {
	h := CSI()
	ctx := context.Background()
	if err := h.ValidatePlugin(ctx, "hostpath.csi.k8s.io", "/csi.sock", []string{"1.0.0"}); !errors.Is(err, errCSINotReady) {
		t.Errorf("ValidatePlugin = %v, want %v", err, errCSINotReady)
	}
	if err := h.RegisterPlugin(ctx, "hostpath.csi.k8s.io", "/csi.sock", []string{"1.0.0"}, nil); !errors.Is(err, errCSINotReady) {
		t.Errorf("RegisterPlugin = %v, want %v", err, errCSINotReady)
	}
	h.DeRegisterPlugin(ctx, "hostpath.csi.k8s.io", "/csi.sock")
}

// TestCSIValidateReplacement: a newer socket of a registered CSI driver is
// checked on its versions alone, whatever version is registered; the CSI
// handler is not ready before the kubelet initialised its CSI plugin.
func TestCSIValidateReplacement(t *testing.T) {
	tests := []struct {
		name     string
		ready    bool
		versions []string
		wantErr  string
	}{
		{name: "same version as a registered driver", ready: true, versions: []string{"1.0.0"}},
		{name: "several versions", ready: true, versions: []string{"0.3.0", "1.2.0"}},
		{name: "no versions", ready: true, wantErr: "no supported CSI version"},
		{name: "only unsupported versions", ready: true, versions: []string{"2.0.0"}, wantErr: "no supported CSI version"},
		{name: "CSI plugin not initialised", versions: []string{"1.0.0"}, wantErr: errCSINotReady.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &csiHandler{ready: func() bool { return tc.ready }}
			err := h.ValidateReplacement(context.Background(), "hostpath.csi.k8s.io", "/csi.sock", tc.versions)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("ValidateReplacement = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}
