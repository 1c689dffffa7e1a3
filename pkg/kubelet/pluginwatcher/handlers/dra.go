package handlers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	dpapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	pluginmanagercache "k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// DefaultStartedInterval is how often WaitForDRA checks whether the
// kubelet's container manager has started.
const DefaultStartedInterval = 100 * time.Millisecond

// ContainerManager is the part of the kubelet's container manager
// (k8s.io/kubernetes/pkg/kubelet/cm.ContainerManager) that WaitForDRA
// uses: the handlers upstream's kubelet adds to its own plugin manager once
// the container manager has started.
type ContainerManager interface {
	GetPluginRegistrationHandlers() map[string]pluginmanagercache.PluginHandler
}

// DRAOptions configures WaitForDRA.
type DRAOptions struct {
	// Started blocks until the container manager has started, or ctx ends.
	// Default: the device manager's registration socket
	// (dpapi.KubeletSocket) completes a gRPC handshake, checked every
	// DefaultStartedInterval. Upstream's container manager starts its DRA
	// manager before its device manager, and the device manager listens
	// only once started, so a socket that answers means the DRA manager's
	// handler exists.
	Started func(ctx context.Context) error
}

// draHandler forwards to the kubelet's DRA manager, the handler upstream's
// plugin manager uses for DRAPlugin (k8s.io/kubernetes/pkg/kubelet/cm/dra/
// plugin.DRAPluginManager), and asks the watcher for that manager's
// semantics.
type draHandler struct {
	upstream pluginwatcher.Handler
}

var (
	_ pluginwatcher.Handler       = &draHandler{}
	_ pluginwatcher.PolicyHandler = &draHandler{}
)

// DRA returns the handler for pluginwatcher.DRAPlugin that forwards to
// upstream, the DRA manager's handler. Calls and their arguments pass
// through unchanged: supported_versions carries gRPC service names
// (v1.DRAPlugin, v1beta1.DRAPlugin, optionally v1.DRAResourceHealth or
// v1alpha1.DRAResourceHealth), and the DRA manager picks among them.
//
// Its Policy is upstream's DRA semantics: every instance of a driver is
// registered (a rolling update keeps the old pod's plugin registered beside
// the new one's; the DRA manager serves with the one registered last), and
// a registered socket that stops answering stays registered until its file
// goes (the DRA manager watches the plugin's service connection itself and
// wipes the driver's ResourceSlices only after its grace period).
func DRA(upstream pluginwatcher.Handler) pluginwatcher.Handler {
	return &draHandler{upstream: upstream}
}

func (h *draHandler) Policy() pluginwatcher.Policy {
	return pluginwatcher.Policy{AllInstances: true, KeepRegisteredWhenRefused: true}
}

func (h *draHandler) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	return h.upstream.ValidatePlugin(ctx, name, endpoint, versions)
}

func (h *draHandler) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, timeout *time.Duration) error {
	return h.upstream.RegisterPlugin(ctx, name, endpoint, versions, timeout)
}

func (h *draHandler) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	h.upstream.DeRegisterPlugin(ctx, name, endpoint)
}

// WaitForDRA waits until the kubelet's container manager cm has started,
// then returns DRA of the DRA manager's handler. Upstream creates that
// handler in the container manager's Start, which the kubelet runs once the
// container runtime is up, and hands it to its plugin manager only then;
// nodeplug's watcher gets it at the same point. It returns an error when
// ctx ends first, or when the started container manager has no DRA
// handler.
func WaitForDRA(ctx context.Context, cm ContainerManager, opts DRAOptions) (pluginwatcher.Handler, error) {
	if opts.Started == nil {
		opts.Started = func(ctx context.Context) error {
			return WaitServing(ctx, dpapi.KubeletSocket, DefaultStartedInterval)
		}
	}
	if err := opts.Started(ctx); err != nil {
		return nil, fmt.Errorf("waiting for the kubelet's container manager to start: %w", err)
	}
	h, ok := cm.GetPluginRegistrationHandlers()[pluginwatcher.DRAPlugin]
	if !ok || isNil(h) {
		return nil, errors.New("the kubelet's container manager has started but offers no DRA handler")
	}
	klog.FromContext(ctx).V(2).Info("The kubelet's DRA manager has started", "handler", fmt.Sprintf("%T", h))
	return DRA(h), nil
}

// isNil reports whether h is nil or a nil pointer in an interface (the DRA
// manager returns its unset plugin manager before Start).
func isNil(h pluginmanagercache.PluginHandler) bool {
	if h == nil {
		return true
	}
	v := reflect.ValueOf(h)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// WaitServing blocks until a gRPC server on the unix socket at path
// completes an HTTP/2 handshake, trying every interval, or until ctx ends.
func WaitServing(ctx context.Context, path string, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if serving(ctx, path, interval) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no gRPC server answered on %s: %w", path, ctx.Err())
		case <-t.C:
		}
	}
}

// serving makes one connection attempt to path, of at most timeout, and
// reports whether it reached READY (the server's HTTP/2 settings arrived).
func serving(ctx context.Context, path string, timeout time.Duration) bool {
	cc, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}))
	if err != nil {
		return false
	}
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc.Connect()
	for {
		switch s := cc.GetState(); s {
		case connectivity.Ready:
			return true
		case connectivity.TransientFailure, connectivity.Shutdown:
			return false
		default:
			if !cc.WaitForStateChange(ctx, s) {
				return false
			}
		}
	}
}
