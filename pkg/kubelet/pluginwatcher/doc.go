// Package pluginwatcher is nodeplug's kubelet plugin watcher: it discovers
// node plugins through unix sockets created in one directory tree and
// registers them with the kubelet component that owns their type.
//
// A plugin serves the upstream registration API
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1, gRPC service
// "pluginregistration.Registration") on a socket in the watched directory.
// The watcher dials it, calls GetInfo, picks the Handler registered for the
// returned type, lets the handler validate (negotiate versions) and
// register the plugin, and reports the result with NotifyRegistrationStatus.
//
// The package is split like upstream's plugin manager, but event driven:
// an fsnotify watch populates the desired state; a per-socket work queue
// feeds a reconciler that compares it with the actual state; an executor
// performs the gRPC calls and file removals. On top of upstream's behaviour
// it retries every failure with backoff, de-registers by plugin name and
// socket path, lets the newest live socket of a plugin win, removes sockets
// nobody listens on, throttles each plugin name with a token bucket, checks
// that the socket name carries the plugin name, and rate-limits its logs.
//
// Handler has the method set of upstream's
// k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache.PluginHandler, so the
// kubelet's own CSI, device-plugin and DRA handlers plug in unchanged (see
// the handlers subpackage). nodeplug's own plugin types use the
// NodeplugTypePrefix and HandlerFuncs.
//
// README.md in this directory states the wire contract.
package pluginwatcher
