package pluginwatcher

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
)

// TestVictimRegistersInFlood: with the flood of BenchmarkVictimCost
// under way (200 sockets that accept and never answer, 50 that answer
// garbage, 1,000 binds a second), a CSI driver announced as
// node-driver-registrar does and a DRA driver started with upstream's
// kubelet-plugin helper, unmodified, each register and are notified. The
// RPC timeout is longer than the test waits, so every never-answering
// socket holds its slot throughout: the victim registers beside them, not
// after them. Its latency is measured by BenchmarkVictimCost.
func TestVictimRegistersInFlood(t *testing.T) {
	for name, tc := range map[string]struct {
		pluginType, driver string
		start              func(t *testing.T, dir, driver string)
	}{
		"CSI driver, registrar's socket": {pluginType: CSIPlugin, driver: "hostpath.csi.k8s.io", start: startCSIVictim},
		"DRA driver, upstream's helper":  {pluginType: DRAPlugin, driver: "gpu.example.com", start: startDRAVictim},
	} {
		t.Run(name, func(t *testing.T) {
			dir := testDir(t)
			opts := withRegistry(Options{RPCTimeout: 30 * time.Second, IdentityPolicy: IdentityReject})
			h := newRecordingHandler(t)
			w := startWatcher(t, dir, opts, tc.pluginType, h)
			startFlood(t, dir)
			eventually(t, "never-answering sockets in flight", func() bool {
				inFlight, _, _ := w.slots.Counts()
				return inFlight >= floodMuteSockets
			})

			tc.start(t, dir, tc.driver)
			eventually(t, "victim registered and notified", func() bool {
				for _, i := range w.asw.List() {
					if i.Key.Name == tc.driver && i.Registered && i.Notified {
						return true
					}
				}
				return false
			})
			if n := h.count("register", tc.driver); n != 1 {
				t.Errorf("victim registered %d times, want 1", n)
			}
		})
	}
}

// startCSIVictim serves the registration socket node-driver-registrar
// creates for driver.
func startCSIVictim(t *testing.T, dir, driver string) {
	startPlugin(t, filepath.Join(dir, driver+"-reg.sock"), pluginInfo(CSIPlugin, driver, "1.0.0"))
}

// startDRAVictim starts upstream's DRA kubelet-plugin helper for driver,
// registering in dir.
func startDRAVictim(t *testing.T, dir, driver string) {
	_, ctx := ktesting.NewTestContext(t)
	helper, err := kubeletplugin.Start(ctx, draDriver{},
		kubeletplugin.DriverName(driver),
		kubeletplugin.NodeName("node-1"),
		kubeletplugin.KubeClient(fake.NewClientset()),
		kubeletplugin.RegistrarDirectoryPath(dir),
		kubeletplugin.PluginDataDirectoryPath(testDir(t)),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(helper.Stop)
}
