package pluginwatcher

import (
	"context"
	"path/filepath"
	"strings"
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
// registers through nodeplug's watcher with its own socket naming (plain,
// rolling-update, and the rolling-update fallback dra-<hash>-reg.sock for a
// driver name too long for a named socket in the directory), passes the
// identity check under the Reject policy, negotiates its gRPC service
// versions, and de-registers when stopped.
func TestDRAHelperRegisters(t *testing.T) {
	// 90 bytes: <name>-<hash>-reg.sock does not fit within 108 bytes in any
	// directory, dra-<hash>-reg.sock does in testDir's.
	long := strings.Repeat("g", 63) + "." + strings.Repeat("h", 14) + ".example.com"
	for name, tc := range map[string]struct {
		driver  string
		rolling bool
		base    string // the socket's base name, when it must be one form
	}{
		"plain socket":                  {driver: "gpu.example.com", base: "gpu.example.com-reg.sock"},
		"rolling update socket":         {driver: "gpu.example.com", rolling: true, base: "gpu.example.com-6f1c2a5e-0000-4000-8000-000000000001-reg.sock"},
		"rolling update, fallback name": {driver: long, rolling: true},
	} {
		t.Run(name, func(t *testing.T) {
			regDir, dataDir := testDir(t), testDir(t)
			h := newRecordingHandler(t)
			h.supported = []string{"v1.DRAPlugin"}
			opts := fastOptions()
			opts.IdentityPolicy = IdentityReject
			w := startWatcher(t, regDir, opts, DRAPlugin, h)

			_, ctx := ktesting.NewTestContext(t)
			options := []kubeletplugin.Option{
				kubeletplugin.DriverName(tc.driver),
				kubeletplugin.NodeName("node-1"),
				kubeletplugin.KubeClient(fake.NewClientset()),
				kubeletplugin.RegistrarDirectoryPath(regDir),
				kubeletplugin.PluginDataDirectoryPath(dataDir),
			}
			if tc.rolling {
				options = append(options, kubeletplugin.RollingUpdate("6f1c2a5e-0000-4000-8000-000000000001"))
			}
			helper, err := kubeletplugin.Start(ctx, draDriver{}, options...)
			if err != nil {
				t.Fatal(err)
			}
			// Helper.RegistrationStatus is not synchronised upstream, so the
			// helper's view is not polled; the watcher's is.
			var sock string
			eventually(t, "DRA helper registered and notified", func() bool {
				for _, i := range w.asw.List() {
					if i.Key.Name == tc.driver && i.Registered && i.Notified {
						sock = i.Rel
						return true
					}
				}
				return false
			})
			switch {
			case tc.base != "" && sock != tc.base:
				t.Errorf("registered socket %q, want %q", sock, tc.base)
			case tc.base == "" && !strings.HasPrefix(sock, "dra-"):
				t.Errorf("registered socket %q, want the helper's dra-<hash>-reg.sock fallback", sock)
			}
			ep, _ := h.current(tc.driver)
			if filepath.Dir(ep) != dataDir {
				t.Errorf("endpoint %q is not the helper's DRA socket in %s", ep, dataDir)
			}
			helper.Stop()
			eventually(t, "DRA helper de-registered", func() bool { return h.count("deregister", tc.driver) == 1 })
		})
	}
}
