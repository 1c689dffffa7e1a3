package cache

import (
	"context"
	"time"
)

// Handler validates, registers and de-registers the plugins of one type.
//
// Its method set is identical to upstream's
// k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache.PluginHandler, so every
// upstream handler (CSI, device manager, DRA) can be passed to AddHandler
// unchanged.
//
// The watcher calls a handler strictly sequentially per plugin type and name:
// no two calls for the same (type, name) overlap. Calls for different names
// may run concurrently.
//
// Version negotiation belongs to the handler: ValidatePlugin receives the
// plugin's supported_versions and returns an error naming the reason when
// none is acceptable. NegotiateVersion is a helper for nodeplug's own types.
type Handler interface {
	// ValidatePlugin returns an error if the plugin's information is
	// unacceptable (unsupported versions, bad name, ...). The error text is
	// sent to the plugin in RegistrationStatus.error.
	ValidatePlugin(ctx context.Context, pluginName string, endpoint string, versions []string) error
	// RegisterPlugin makes the plugin available to its consumer. An error is
	// reported to the plugin and the registration is retried with backoff.
	RegisterPlugin(ctx context.Context, pluginName, endpoint string, versions []string, pluginClientTimeout *time.Duration) error
	// DeRegisterPlugin is called when the registered socket of this plugin
	// name goes away or is superseded by a newer socket. It is only ever
	// called with the endpoint that was last registered successfully.
	DeRegisterPlugin(ctx context.Context, pluginName, endpoint string)
}

// ReplacementValidator is an optional interface of a Handler whose
// ValidatePlugin refuses a plugin name that is already registered, as
// upstream's CSI handler does unless the new socket offers a higher
// version.
//
// When a newer socket of a registered plugin appears, the watcher checks it
// before it touches the registered one, so that a bad upgrade never takes
// down the working instance:
//
//  1. ValidateReplacement (or, for a handler without it, ValidatePlugin) on
//     the new socket while the old one is still registered. An error fails
//     the new socket's attempt: it is told why and retried with backoff,
//     and the old one stays registered throughout.
//  2. DeRegisterPlugin of the old socket.
//  3. ValidatePlugin, then RegisterPlugin, of the new socket. If either
//     fails, the old socket (if still live) registers again.
//
// ValidateReplacement must check everything ValidatePlugin checks except
// that the name is taken. A handler that refuses duplicates in
// ValidatePlugin and lacks this method never has a live registered socket
// replaced by another path: the newer socket waits until the old one goes.
// A socket replaced in place (same path, new inode) is not a replacement in
// this sense: its old generation is gone and is de-registered first.
type ReplacementValidator interface {
	ValidateReplacement(ctx context.Context, pluginName string, endpoint string, versions []string) error
}

// Policy says how the watcher treats the instances (sockets) of one
// plugin name for a handler. The zero value is the watcher's default: one
// registered instance per name (the newest live socket; older ones are
// standbys), and a registered socket that refuses connections long enough
// is removed and de-registered.
type Policy struct {
	// AllInstances registers every live socket of a plugin name, each with
	// its own endpoint, and de-registers each only when its socket goes:
	// the handler's consumer keeps several instances of one plugin at once
	// and chooses which one serves. Upstream's DRA manager does (seamless
	// upgrades, kubernetes#129832: the most recently registered instance
	// serves), and so does its device manager since v1.37 (several clients
	// per resource, kubernetes#135437). Two sockets of one name that claim
	// the same endpoint are never registered together: the later one is
	// refused until the other goes.
	AllInstances bool
	// KeepRegisteredWhenRefused keeps a registered socket that refuses
	// connections registered, and its file in place, until the file is
	// removed or replaced: the consumer watches the plugin's service
	// itself and decides what losing it means. Upstream's DRA manager
	// keeps a plugin whose service connection dropped and wipes the node's
	// ResourceSlices only after a grace period; a de-registration by the
	// watcher would change that. A socket that was never registered is
	// still removed when it is stale.
	KeepRegisteredWhenRefused bool
}

// PolicyHandler is an optional interface of a Handler that asks for a
// Policy other than the default.
type PolicyHandler interface {
	Policy() Policy
}

// PolicyOf returns h's Policy: the zero Policy unless h implements
// PolicyHandler.
func PolicyOf(h Handler) Policy {
	if p, ok := h.(PolicyHandler); ok {
		return p.Policy()
	}
	return Policy{}
}
