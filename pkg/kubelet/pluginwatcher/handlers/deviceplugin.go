package handlers

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	dpapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// DefaultDeviceManagerTimeout bounds the Register RPC to the device
// manager. That RPC returns only after the device manager has dialled the
// plugin (up to 10 s in upstream) and called GetDevicePluginOptions.
const DefaultDeviceManagerTimeout = 15 * time.Second

// DevicePluginOptions configures NewDevicePlugin.
type DevicePluginOptions struct {
	// KubeletSocket is the device manager's registration socket. Default
	// dpapi.KubeletSocket (/var/lib/kubelet/device-plugins/kubelet.sock):
	// upstream's device manager always listens there on Linux, whatever
	// --root-dir says (devicemanager.NewManagerImpl).
	KubeletSocket string
	// Timeout bounds the whole Register RPC. Default
	// DefaultDeviceManagerTimeout; a pluginClientTimeout given by the
	// watcher takes precedence.
	Timeout time.Duration
}

// devicePluginHandler hands device plugins discovered by the watcher to
// the kubelet's device manager through the device manager's own public
// registration API, the one device plugins use directly ("model 1").
type devicePluginHandler struct {
	socket  string
	timeout time.Duration
}

var (
	_ pluginwatcher.Handler       = &devicePluginHandler{}
	_ pluginwatcher.PolicyHandler = &devicePluginHandler{}
)

// NewDevicePlugin returns the handler for pluginwatcher.DevicePlugin.
//
// RegisterPlugin calls Registration.Register on the device manager's
// socket with Version "v1beta1", ResourceName = the plugin name and
// Endpoint = the plugin endpoint relative to the socket's directory. The
// device manager joins that directory with Endpoint (filepath.Join, which
// also resolves ".."), dials the plugin, calls GetDevicePluginOptions and
// starts ListAndWatch, after which the node advertises the resource.
//
// The v1beta1 API has no de-registration call. The device manager drops a
// plugin when its ListAndWatch stream ends, i.e. when the plugin stops
// serving; DeRegisterPlugin therefore only logs. A plugin that removes its
// registration socket but keeps serving stays advertised.
func NewDevicePlugin(opts DevicePluginOptions) pluginwatcher.Handler {
	if opts.KubeletSocket == "" {
		opts.KubeletSocket = dpapi.KubeletSocket
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultDeviceManagerTimeout
	}
	return &devicePluginHandler{socket: opts.KubeletSocket, timeout: opts.Timeout}
}

// Policy registers every instance of a device plugin: the v1.37 device
// manager keeps several clients per resource, each under its own socket,
// and removes one only when its own stream ends (seamless device plugin
// upgrades, kubernetes#135437). An owner election would register the
// older instance again when a newer one goes, while the device manager
// still has it: the device manager refuses that ("already connected") and
// its registration server forgets the instance's client, so that the
// instance's own disconnection would later go unnoticed.
func (h *devicePluginHandler) Policy() pluginwatcher.Policy {
	return pluginwatcher.Policy{AllInstances: true}
}

// ValidatePlugin applies the checks the device manager's Register RPC
// applies, so that a bad plugin is rejected with a clear reason before any
// RPC: the plugin must offer "v1beta1" and be named by an extended
// resource name ("vendor-domain/resource").
func (h *devicePluginHandler) ValidatePlugin(_ context.Context, name, endpoint string, versions []string) error {
	if _, err := pluginwatcher.NegotiateVersion(versions, []string{dpapi.Version}); err != nil {
		return err
	}
	if !v1helper.IsExtendedResourceName(v1.ResourceName(name)) {
		return fmt.Errorf("device plugin name %q is not an extended resource name (vendor-domain/resource)", name)
	}
	_, err := h.relativeEndpoint(endpoint)
	return err
}

// relativeEndpoint expresses endpoint relative to the device manager's
// socket directory, the form the Register RPC expects.
func (h *devicePluginHandler) relativeEndpoint(endpoint string) (string, error) {
	if !filepath.IsAbs(endpoint) {
		return "", fmt.Errorf("device plugin endpoint %q must be an absolute path", endpoint)
	}
	rel, err := filepath.Rel(filepath.Dir(h.socket), endpoint)
	if err != nil {
		return "", fmt.Errorf("device plugin endpoint %q: %w", endpoint, err)
	}
	return rel, nil
}

func (h *devicePluginHandler) RegisterPlugin(ctx context.Context, name, endpoint string, _ []string, clientTimeout *time.Duration) error {
	rel, err := h.relativeEndpoint(endpoint)
	if err != nil {
		return err
	}
	timeout := h.timeout
	if clientTimeout != nil {
		timeout = *clientTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc, err := grpc.NewClient("passthrough:///"+h.socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", h.socket)
		}))
	if err != nil {
		return fmt.Errorf("connecting to device manager at %s: %w", h.socket, err)
	}
	defer func() { _ = cc.Close() }()
	_, err = dpapi.NewRegistrationClient(cc).Register(ctx, &dpapi.RegisterRequest{
		Version:      dpapi.Version,
		Endpoint:     rel,
		ResourceName: name,
	}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("device manager refused %s at %s: %w", name, endpoint, err)
	}
	return nil
}

// deviceGoneMsg is logged when a device plugin's registration socket goes.
const deviceGoneMsg = "Device plugin registration socket gone; the device manager drops the plugin when its ListAndWatch stream ends"

func (h *devicePluginHandler) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	klog.FromContext(ctx).V(2).Info(deviceGoneMsg,
		"resourceName", name, "endpoint", endpoint, "relativeTo", strings.TrimSuffix(filepath.Dir(h.socket), "/"))
}
