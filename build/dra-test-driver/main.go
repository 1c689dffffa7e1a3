// Command dra-test-driver runs upstream's DRA test driver
// (k8s.io/kubernetes/test/e2e/dra/test-driver/app, pinned by go.mod) as a
// kubelet plugin in a pod, with the DRA helper's RollingUpdate option on:
// each instance registers under a socket named for its pod, so that two
// instances on one node (a DaemonSet's maxSurge) do not remove each other's
// sockets. Upstream's own command line (test/e2e/dra/test-driver) has no
// flag for it; everything else (the devices it publishes, how it prepares
// claims, the CDI specs it writes) is upstream's code, unchanged. See
// README.md in this directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/dra/test-driver/app"
)

type config struct {
	driver, node, podUID, registrar, dataRoot, cdiDir string
	devices                                           int
}

func main() {
	klog.InitFlags(nil)
	var c config
	flag.StringVar(&c.driver, "drivername", "test-driver.cdi.k8s.io", "DRA driver name")
	flag.StringVar(&c.node, "node-name", "", "the node this instance serves (required)")
	flag.StringVar(&c.podUID, "pod-uid", "", "this instance's pod UID, for the helper's RollingUpdate (required)")
	flag.StringVar(&c.registrar, "plugin-registration-path", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registration directory")
	flag.StringVar(&c.dataRoot, "datadir", kubeletplugin.KubeletPluginsDir, "the directory of per-driver data directories")
	flag.StringVar(&c.cdiDir, "cdi-dir", "/var/run/cdi", "where the driver writes CDI specs")
	flag.IntVar(&c.devices, "num-devices", 4, "devices to publish for the node")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	ctx = klog.NewContext(ctx, klog.Background())
	err := run(ctx, c)
	cancel()
	if err != nil {
		klog.FromContext(ctx).Error(err, "dra-test-driver failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.FlushAndExit(klog.ExitFlushTimeout, 0)
}

func run(ctx context.Context, c config) error {
	if c.node == "" || c.podUID == "" {
		return errors.New("--node-name and --pod-uid are required (set them from the downward API)")
	}
	if c.devices < 1 {
		return fmt.Errorf("--num-devices=%d: want at least 1", c.devices)
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster client configuration: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	dataDir := filepath.Join(c.dataRoot, c.driver)
	for _, dir := range []string{c.cdiDir, dataDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	plugin, err := app.StartPlugin(ctx, c.cdiDir, c.driver, client, c.node,
		app.FileOperations{DriverResources: resources(c.node, c.devices)},
		app.Options{EnableHealthService: true}, // as upstream's command
		kubeletplugin.PluginDataDirectoryPath(dataDir),
		kubeletplugin.RegistrarDirectoryPath(c.registrar),
		kubeletplugin.RollingUpdate(types.UID(c.podUID)),
	)
	if err != nil {
		return fmt.Errorf("start upstream's test driver: %w", err)
	}
	klog.FromContext(ctx).Info("Serving", "driver", c.driver, "node", c.node, "podUID", c.podUID)
	<-ctx.Done()
	// The helper removes this instance's sockets: a clean de-registration.
	plugin.Stop()
	return nil
}

// resources are the devices upstream's command publishes: one pool named
// for the node, devices device-00, device-01, ...
func resources(node string, n int) *resourceslice.DriverResources {
	devices := make([]resourceapi.Device, n)
	for i := range devices {
		devices[i] = resourceapi.Device{Name: fmt.Sprintf("device-%02d", i)}
	}
	return &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
}
