// Package registrar lets a node plugin register itself with the kubelet's
// plugin watcher (nodeplug's, or upstream's plugin manager).
//
// It serves the upstream registration API
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1, gRPC service
// "pluginregistration.Registration") on a socket in the kubelet's
// registration directory. The socket is named after the plugin
// ("<name>.<unix-nanoseconds>.sock", with "/" in the name written as "_"),
// which is what nodeplug's identity check expects, and it appears
// atomically: it is bound under a hidden name and renamed into place once
// it accepts connections. The kubelet's verdict arrives through
// NotifyRegistrationStatus and is reported to Config.OnStatus and
// WaitForStatus. Stop removes the socket, which de-registers the plugin.
//
// The module has no dependency on nodeplug itself; see example/ for a
// complete plugin and docs/plugin-watcher.md in the nodeplug repository for
// the wire contract.
package registrar
