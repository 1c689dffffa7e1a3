package pluginwatcher

import (
	"context"
	"fmt"
	"regexp"
	"time"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Plugin types understood by the kubelet. The values are the wire strings a
// plugin returns in PluginInfo.type.
const (
	CSIPlugin    = registerapi.CSIPlugin
	DevicePlugin = registerapi.DevicePlugin
	DRAPlugin    = registerapi.DRAPlugin
)

// NodeplugTypePrefix qualifies plugin types that nodeplug defines itself,
// for example "nodeplug.io/MountUtility". Upstream types never contain a "/",
// so a qualified type can never collide with a future upstream type.
const NodeplugTypePrefix = "nodeplug.io/"

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

// Watcher discovers plugin sockets in one directory tree and drives their
// registration with the handler that owns their type.
type Watcher interface {
	// AddHandler sets the handler for pluginType. It may be called before or
	// after Start. It panics on a nil handler or a malformed type, because
	// both are programming errors (see ValidatePluginType).
	AddHandler(pluginType string, h Handler)
	// Start creates the directory if needed, scans it (restart recovery),
	// starts the fsnotify watch and the dispatcher, and returns. Everything
	// stops when ctx is cancelled. Start may be called only once.
	Start(ctx context.Context) error
}

// IdentityPolicy says what happens when the socket file name does not carry
// the plugin name returned by GetInfo.
type IdentityPolicy string

const (
	// IdentityReject refuses the registration and reports the reason to the
	// plugin. The socket is not retried until it is replaced.
	IdentityReject IdentityPolicy = "Reject"
	// IdentityWarn registers the plugin anyway and logs a warning.
	IdentityWarn IdentityPolicy = "Warn"
)

var pluginTypeRE = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*Plugin|nodeplug\.io/[A-Z][A-Za-z0-9]*)$`)

// ValidatePluginType checks the spelling of a plugin type. Upstream-style
// types are UpperCamelCase ending in "Plugin" (CSIPlugin, DevicePlugin,
// DRAPlugin). nodeplug's own types are NodeplugTypePrefix followed by an
// UpperCamelCase word, e.g. "nodeplug.io/MountUtility".
func ValidatePluginType(pluginType string) error {
	if !pluginTypeRE.MatchString(pluginType) {
		return fmt.Errorf("invalid plugin type %q: want <UpperCamel>Plugin or %s<UpperCamel>", pluginType, NodeplugTypePrefix)
	}
	return nil
}

// HandlerFuncs adapts plain functions to Handler. It is the extension point
// for nodeplug's own plugin types: fill in the functions and pass the value to
// AddHandler under a NodeplugTypePrefix type. Nil functions accept and do
// nothing.
type HandlerFuncs struct {
	Validate   func(ctx context.Context, name, endpoint string, versions []string) error
	Register   func(ctx context.Context, name, endpoint string, versions []string, timeout *time.Duration) error
	DeRegister func(ctx context.Context, name, endpoint string)
}

var _ Handler = HandlerFuncs{}

// ValidatePlugin implements Handler.
func (f HandlerFuncs) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	if f.Validate == nil {
		return nil
	}
	return f.Validate(ctx, name, endpoint, versions)
}

// RegisterPlugin implements Handler.
func (f HandlerFuncs) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, timeout *time.Duration) error {
	if f.Register == nil {
		return nil
	}
	return f.Register(ctx, name, endpoint, versions, timeout)
}

// DeRegisterPlugin implements Handler.
func (f HandlerFuncs) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	if f.DeRegister != nil {
		f.DeRegister(ctx, name, endpoint)
	}
}

// NegotiateVersion returns the first entry of supported (the handler's
// preference order) that the plugin also offers, or an error listing both
// sides. Comparison is exact string equality.
func NegotiateVersion(offered, supported []string) (string, error) {
	for _, s := range supported {
		for _, o := range offered {
			if o == s {
				return s, nil
			}
		}
	}
	return "", fmt.Errorf("no common version: plugin offers %q, kubelet supports %q", offered, supported)
}
