package pluginwatcher

import (
	"context"
	"fmt"
	"regexp"
	"time"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
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
// See cache.Handler; its method set is that of upstream's
// pluginmanager/cache.PluginHandler.
type Handler = cache.Handler

// ReplacementValidator is an optional interface of a Handler that refuses
// a plugin name that is already registered; see cache.ReplacementValidator
// for when the watcher calls it.
type ReplacementValidator = cache.ReplacementValidator

// Policy says how the watcher treats the instances (sockets) of one
// plugin name: one registered at a time (the default) or all of them, and
// whether a registered socket that refuses connections is removed. See
// cache.Policy.
type Policy = cache.Policy

// PolicyHandler is an optional interface of a Handler that asks for a
// Policy other than the default.
type PolicyHandler = cache.PolicyHandler

// Watcher discovers plugin sockets in one directory tree and drives their
// registration with the handler that owns their type.
type Watcher interface {
	// AddHandler sets the handler for pluginType. It may be called before or
	// after Start. Sockets whose last attempt found no handler for
	// pluginType are retried at once, with their backoff reset. It panics
	// on a nil handler or a malformed type, because both are programming
	// errors (see ValidatePluginType).
	AddHandler(pluginType string, h Handler)
	// ExpectHandler declares that a handler for pluginType will be added
	// later, and why it is not there yet: until AddHandler, the type's
	// plugins get a negative status that says so (reason) and that their
	// registration is retried as soon as the handler arrives, and their
	// failures count as "handler_pending", labelled with the type. It is
	// ignored for a type that has a handler. It panics on a malformed type.
	ExpectHandler(pluginType, reason string)
	// Start creates the directory if needed, scans it (restart recovery),
	// starts the directory watch and the dispatcher, and returns. Everything
	// stops when ctx is cancelled. Start may be called only once.
	Start(ctx context.Context) error
}

// IdentityPolicy says what happens when the socket file name does not carry
// the plugin name returned by GetInfo.
type IdentityPolicy = socket.IdentityPolicy

const (
	// IdentityReject refuses the registration and reports the reason to the
	// plugin. The socket is not retried until it is replaced.
	IdentityReject = socket.IdentityReject
	// IdentityWarn registers the plugin anyway and logs a warning.
	IdentityWarn = socket.IdentityWarn
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
