// Package handlers adapts the embedded kubelet's plugin consumers to
// pluginwatcher.Handler, so that plugins registered through nodeplug's
// watcher reach the same kubelet code as plugins registered through
// upstream's plugin manager.
//
// It is the one thin package of the plugin watcher that imports
// k8s.io/kubernetes:
//
//   - CSI returns upstream's own CSI registration handler
//     (k8s.io/kubernetes/pkg/volume/csi.PluginHandler), guarded until the
//     kubelet has initialised its CSI volume plugin.
//   - NewDevicePlugin forwards a device plugin to the kubelet's device
//     manager through the device manager's public v1beta1 Registration
//     service (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1, kubelet.sock),
//     without copying any device-manager code, every instance of a
//     resource at once as the v1.37 device manager keeps them.
//   - DRA forwards a DRA driver to the kubelet's own DRA manager, the
//     handler upstream's plugin manager uses, with upstream's DRA
//     semantics as its pluginwatcher.Policy; WaitForDRA takes that handler
//     from the container manager once it has started.
//
// README.md in the parent directory explains the wire contract, and
// docs/plugin-watcher.md compares each type with upstream's kubelet.
package handlers
