package handlers

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	dpapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	dpserver "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// withoutPolicy hides a handler's Policy: the watcher's default, one
// registered instance per name.
type withoutPolicy struct {
	pluginwatcher.Handler
}

// TestDevicePluginSeamlessUpgrade: two instances of one device plugin
// (upstream's stub, plugin-watcher mode) run at once, as in a seamless
// device plugin upgrade (kubernetes#135437). Through nodeplug's watcher,
// upstream's registration server connects both and keeps both; when the
// new one goes (an upgrade rolled back) the old one goes on serving and is
// not connected a second time. The contrast case shows what the owner
// election used to do: register the old instance again, which upstream's
// device manager refuses as already connected.
//
// That the old instance is not connected again is checked once the watcher
// has handled the new instance's removal to its end: the removal
// de-registers the new instance and queues the old one for a look, and
// the watcher logs that the old one needs nothing.
func TestDevicePluginSeamlessUpgrade(t *testing.T) {
	for name, policy := range map[string]bool{
		"every instance registered":                   true,
		"default policy, for contrast: re-registered": false,
	} {
		t.Run(name, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			logs := &logCapture{}
			ctx, cancel := context.WithCancel(logs.context(ctx))
			defer cancel()
			dm, regDir := newFakeDeviceManager(), shortDir(t, "reg")
			var h pluginwatcher.Handler = NewDevicePlugin(DevicePluginOptions{KubeletSocket: startRegistrationServer(t, logger, dm)})
			if !policy {
				h = withoutPolicy{h}
			}
			startDevicePluginWatcher(ctx, t, regDir, h)

			const resource = "example.com/resource"
			oldStub, oldSock := startStub(ctx, t, regDir, "dp.1", resource)
			eventually(t, "the old instance connected", func() bool { s, _ := dm.instances(resource); return slices.Equal(s, []string{oldSock}) })
			newStub, newSock := startStub(ctx, t, regDir, "dp.2", resource)
			eventually(t, "both instances connected", func() bool {
				s, _ := dm.instances(resource)
				return slices.Equal(s, []string{oldSock, newSock})
			})

			if err := newStub.Stop(logger); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the new instance dropped", func() bool { s, _ := dm.instances(resource); return slices.Equal(s, []string{oldSock}) })
			if !policy {
				eventually(t, "the old instance registered again", func() bool { _, c := dm.instances(resource); return c[oldSock] == 2 })
				return
			}
			gone := logs.wait(t, -1, deviceGoneMsg, "endpoint", newSock)
			logs.wait(t, gone.seq, "Plugin socket needs nothing", "path", oldSock)
			if s, connects := dm.instances(resource); !slices.Equal(s, []string{oldSock}) || connects[oldSock] != 1 {
				t.Errorf("connected %q, the old instance connected %d times; want only the old one, connected once", s, connects[oldSock])
			}
			if err := oldStub.Stop(logger); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// startRegistrationServer runs upstream's device manager registration
// server for dm and returns its socket.
func startRegistrationServer(t *testing.T, logger klog.Logger, dm *fakeDeviceManager) string {
	t.Helper()
	sock := filepath.Join(shortDir(t, "dm"), "kubelet.sock")
	srv, err := dpserver.NewServer(logger, sock, dm, dm)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(logger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(logger) })
	return sock
}

func startDevicePluginWatcher(ctx context.Context, t *testing.T, dir string, h pluginwatcher.Handler) {
	t.Helper()
	w, err := pluginwatcher.NewWatcher(dir, pluginwatcher.Options{
		RetryBase: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond, MetricsRegistry: metrics.NewKubeRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.AddHandler(pluginwatcher.DevicePlugin, h)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// startStub starts upstream's sample device plugin stub on regDir/name,
// serving resource with one device.
func startStub(ctx context.Context, t *testing.T, regDir, name, resource string) (*dpserver.Stub, string) {
	t.Helper()
	sock := filepath.Join(regDir, name)
	stub := dpserver.NewDevicePluginStub(klog.FromContext(ctx), []*dpapi.Device{{ID: "dev-" + name, Health: dpapi.Healthy}}, sock, resource, false, false)
	if err := stub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stub.Stop(klog.FromContext(ctx)) })
	return stub, sock
}
