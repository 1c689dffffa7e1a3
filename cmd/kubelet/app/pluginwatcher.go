package app

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/handlers"
)

// usePluginWatcher starts nodeplug's plugin watcher on
// --experimental-plugin-registration-dir with the CSIPlugin and
// DevicePlugin handlers.
//
// The watcher is started from a kubelet Option: by then upstream has run
// the CSI volume plugin's Init (which the CSI handler forwards to) and set
// the event recorder. NodeplugOptions.Validate has checked the directory;
// a watcher that cannot start is logged and the kubelet keeps running, as
// with upstream's plugin manager. The device plugin handler needs nothing from the
// kubelet but the device manager's registration socket, which it retries
// until the device manager listens.
func usePluginWatcher(ctx context.Context, deps *kubelet.Dependencies, np *NodeplugOptions, node *v1.ObjectReference) {
	deps.Options = append(deps.Options, func(*kubelet.Kubelet) {
		logger := klog.FromContext(ctx)
		w, err := pluginwatcher.NewWatcher(np.PluginRegistrationDir, pluginwatcher.Options{
			IdentityPolicy: pluginwatcher.IdentityPolicy(np.PluginNamePolicy),
			Recorder:       deps.Recorder,
			NodeRef:        node,
		})
		if err != nil {
			logger.Error(err, "Plugin watcher not started", "dir", np.PluginRegistrationDir)
			return
		}
		w.AddHandler(pluginwatcher.CSIPlugin, handlers.CSI())
		w.AddHandler(pluginwatcher.DevicePlugin, handlers.NewDevicePlugin(handlers.DevicePluginOptions{}))
		if err := w.Start(ctx); err != nil {
			logger.Error(err, "Plugin watcher not started", "dir", np.PluginRegistrationDir)
		}
	})
}
