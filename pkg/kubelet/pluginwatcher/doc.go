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
// The watcher is split by role like upstream's plugin manager, but event
// driven: package watch populates the desired state (package cache) from
// the file system, watched through pkg/util/dirwatch; a per-socket work
// queue and a dispatcher bounded by package slots feed package reconciler,
// which compares the desired state with the actual state and drives
// package executor (gRPC calls, file removals). On top of upstream's
// behaviour it retries every failure with backoff, de-registers by plugin
// name and socket path, lets the newest live socket of a plugin win,
// removes sockets nobody listens on, throttles each plugin name with a
// token bucket (package throttle), checks that the socket name carries the
// plugin name (package socket), and rate-limits its logs (package report).
// This package wires them and is the API the kubelet uses.
//
// Handler has the method set of upstream's
// k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache.PluginHandler, so the
// kubelet's own CSI, device-plugin and DRA handlers plug in unchanged (see
// the handlers subpackage). nodeplug's own plugin types use the
// NodeplugTypePrefix and HandlerFuncs.
//
// README.md in this directory states the wire contract and lists the
// packages.
package pluginwatcher
