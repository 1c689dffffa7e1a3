package handlers

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	draplugin "k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

const driver = "gpu.example.com"

// TestDRAServicesPassThrough: a DRA plugin's supported_versions are gRPC
// service names; nodeplug's watcher hands them, unchanged and in order, to
// upstream's DRA plugin manager, which picks the DRAPlugin service (v1
// before v1beta1) and the optional DRAResourceHealth one, or refuses with
// its own reason, which reaches the plugin.
func TestDRAServicesPassThrough(t *testing.T) {
	for name, tc := range map[string]struct {
		services []string
		wantErr  string
	}{
		"v1 only":                      {services: []string{"v1.DRAPlugin"}},
		"v1beta1 only (older drivers)": {services: []string{"v1beta1.DRAPlugin"}},
		"both, both health services":   {services: []string{"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"}},
		"v1beta1, alpha health":        {services: []string{"v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"}},
		"health service only":          {services: []string{"v1.DRAResourceHealth"}, wantErr: "none of services supported by the plugin"},
		"a CSI-style version":          {services: []string{"1.0.0"}, wantErr: "none of services supported by the plugin"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := shortDir(t, "dra")
			pm := newDRAManager(t, nil, 0, nil)
			rec := &recorder{upstream: pm}
			startDRAWatcher(t, dir, DRA(rec), nil)
			endpoint := filepath.Join(dir, "svc", "dra.sock")
			p := startRegPlugin(t, filepath.Join(dir, driver+"-reg.sock"),
				&registerapi.PluginInfo{Type: pluginwatcher.DRAPlugin, Name: driver, Endpoint: endpoint, SupportedVersions: tc.services})

			s := p.waitStatus(t)
			if tc.wantErr != "" {
				if s.PluginRegistered || !strings.Contains(s.Error, tc.wantErr) {
					t.Fatalf("status %+v, want a refusal containing %q", s, tc.wantErr)
				}
				if _, err := pm.GetPlugin(driver); err == nil {
					t.Error("the DRA manager has the refused plugin")
				}
				return
			}
			if !s.PluginRegistered {
				t.Fatalf("status %+v, want registered", s)
			}
			regs := rec.ops("register")
			if len(regs) != 1 || regs[0].endpoint != endpoint || !slices.Equal(regs[0].versions, tc.services) {
				t.Errorf("RegisterPlugin calls %+v, want one with endpoint %s and services %q", regs, endpoint, tc.services)
			}
			if _, err := pm.GetPlugin(driver); err != nil {
				t.Errorf("the DRA manager does not serve the plugin: %v", err)
			}
		})
	}
}

// TestDRASeamlessUpgrade runs two instances of one driver with upstream's
// DRA helper in rolling-update mode, as a DaemonSet with maxSurge does
// (kubernetes#129832): through nodeplug's watcher upstream's DRA manager
// gets both, the newer serves, the older is never de-registered while its
// socket lives, and the newer keeps serving when the older goes.
func TestDRASeamlessUpgrade(t *testing.T) {
	regDir, dataDir := shortDir(t, "reg"), shortDir(t, "data")
	pm := newDRAManager(t, nil, 0, nil)
	rec := &recorder{upstream: pm}
	startDRAWatcher(t, regDir, DRA(rec), nil)
	_, ctx := ktesting.NewTestContext(t)
	served := make(chan string, 10)

	old := startInstance(ctx, t, regDir, dataDir, "old", served)
	eventually(t, "the old instance serves", func() bool { return servedBy(ctx, pm, served) == "old" })
	oldEndpoint := rec.ops("register")[0].endpoint

	next := startInstance(ctx, t, regDir, dataDir, "new", served)
	eventually(t, "the new instance serves", func() bool { return servedBy(ctx, pm, served) == "new" })
	if len(rec.ops("deregister")) != 0 {
		t.Errorf("an instance was de-registered while both run: %+v", rec.ops("deregister"))
	}
	if regs := rec.ops("register"); len(regs) != 2 {
		t.Errorf("RegisterPlugin calls %+v, want one per instance", regs)
	}

	old.Stop()
	eventually(t, "the old instance de-registered", func() bool { return len(rec.ops("deregister")) == 1 })
	if d := rec.ops("deregister")[0]; d.endpoint != oldEndpoint {
		t.Errorf("de-registered %s, want the old instance's %s", d.endpoint, oldEndpoint)
	}
	if got := servedBy(ctx, pm, served); got != "new" {
		t.Errorf("after the old instance left, served by %q, want new", got)
	}
	next.Stop()
	eventually(t, "no instance left", func() bool { _, err := pm.GetPlugin(driver); return err != nil })
}

// instanceDriver is a DRA driver that says which instance it is when
// asked to prepare claims.
type instanceDriver struct {
	id     string
	served chan<- string
}

func (d instanceDriver) PrepareResourceClaims(context.Context, []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.served <- d.id
	return nil, nil
}

func (instanceDriver) UnprepareResourceClaims(context.Context, []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	return nil, nil
}

func (instanceDriver) HandleError(context.Context, error, string) {}

func (instanceDriver) WatchHealthStatus(ctx context.Context, _ chan<- kubeletplugin.DeviceHealthReport) error {
	<-ctx.Done()
	return nil
}

// startInstance starts one instance of the driver with the DRA helper in
// rolling-update mode, with its own pod UID.
func startInstance(ctx context.Context, t *testing.T, regDir, dataDir, id string, served chan<- string) *kubeletplugin.Helper {
	t.Helper()
	h, err := kubeletplugin.Start(ctx, instanceDriver{id: id, served: served},
		kubeletplugin.DriverName(driver),
		kubeletplugin.NodeName("node-1"),
		kubeletplugin.KubeClient(fake.NewClientset()),
		kubeletplugin.RegistrarDirectoryPath(regDir),
		kubeletplugin.PluginDataDirectoryPath(dataDir),
		kubeletplugin.RollingUpdate(types.UID("6f1c2a5e-0000-4000-8000-00000000000"+id[:1])))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

// servedBy asks the DRA manager for the driver, as the kubelet does to
// prepare a pod's claims, and returns the instance that answered ("" if
// none did).
func servedBy(ctx context.Context, pm *draplugin.DRAPluginManager, served <-chan string) string {
	p, err := pm.GetPlugin(driver)
	if err != nil {
		return ""
	}
	if _, err := p.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{}); err != nil {
		return ""
	}
	select {
	case id := <-served:
		return id
	default:
		return ""
	}
}
