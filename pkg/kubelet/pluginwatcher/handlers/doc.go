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
//     without copying any device-manager code.
//
// README.md in the parent directory explains the wire contract of both.
package handlers
