package pluginwatcher

import (
	"context"
	"path/filepath"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
)

// draDriver is a DRA driver that prepares nothing; only its registration
// matters here.
type draDriver struct{}

func (draDriver) PrepareResourceClaims(context.Context, []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	return nil, nil
}

func (draDriver) UnprepareResourceClaims(context.Context, []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	return nil, nil
}

func (draDriver) HandleError(context.Context, error, string) {}

func (draDriver) WatchHealthStatus(ctx context.Context, _ chan<- kubeletplugin.DeviceHealthReport) error {
	<-ctx.Done()
	return nil
}

// TestDRAHelperRegisters: upstream's DRA kubelet-plugin helper, unmodified,
// registers through nodeplug's watcher with its own socket naming (plain
// and rolling-update), passes the identity check under the Reject policy,
// negotiates its gRPC service versions, and de-registers when stopped.
func TestDRAHelperRegisters(t *testing.T) {
	for name, rolling := range map[string]bool{"plain socket": false, "rolling update socket": true} {
		t.Run(name, func(t *testing.T) {
			regDir, dataDir := testDir(t), testDir(t)
			h := newRecordingHandler(t)
			h.supported = []string{"v1.DRAPlugin"}
			opts := fastOptions()
			opts.IdentityPolicy = IdentityReject
			w := startWatcher(t, regDir, opts, DRAPlugin, h)

			_, ctx := ktesting.NewTestContext(t)
			options := []kubeletplugin.Option{
				kubeletplugin.DriverName("gpu.example.com"),
				kubeletplugin.NodeName("node-1"),
				kubeletplugin.KubeClient(fake.NewClientset()),
				kubeletplugin.RegistrarDirectoryPath(regDir),
				kubeletplugin.PluginDataDirectoryPath(dataDir),
			}
			if rolling {
				options = append(options, kubeletplugin.RollingUpdate("6f1c2a5e-0000-4000-8000-000000000001"))
			}
			helper, err := kubeletplugin.Start(ctx, draDriver{}, options...)
			if err != nil {
				t.Fatal(err)
			}
			// Helper.RegistrationStatus is not synchronised upstream, so the
			// helper's view is not polled; the watcher's is.
			eventually(t, "DRA helper registered and notified", func() bool {
				for _, i := range w.asw.List() {
					if i.Key.Name == "gpu.example.com" && i.Registered && i.Notified {
						return true
					}
				}
				return false
			})
			ep, _ := h.current("gpu.example.com")
			if filepath.Dir(ep) != dataDir {
				t.Errorf("endpoint %q is not the helper's DRA socket in %s", ep, dataDir)
			}
			helper.Stop()
			eventually(t, "DRA helper de-registered", func() bool { return h.count("deregister", "gpu.example.com") == 1 })
		})
	}
}
