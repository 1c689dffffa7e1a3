package handlers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kubernetes/pkg/volume/csi"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
)

// errCSINotReady is returned until the kubelet initialised its CSI volume
// plugin; the watcher retries with backoff.
var errCSINotReady = errors.New("the kubelet's CSI volume plugin is not initialised yet")

// csiHandler forwards to upstream's CSI registration handler, the same
// object upstream's plugin manager uses (k8s.io/kubernetes/pkg/volume/csi).
type csiHandler struct {
	upstream *csi.RegistrationHandler
	ready    func() bool
}

var (
	_ pluginwatcher.Handler              = &csiHandler{}
	_ pluginwatcher.ReplacementValidator = &csiHandler{}
)

// CSI returns the handler for pluginwatcher.CSIPlugin. CSI drivers it
// registers are stored in the embedded kubelet's CSI driver store and
// installed on the CSINode object exactly as upstream does, so volumes of
// those drivers mount.
//
// Upstream's handler dereferences state that the kubelet sets while
// initialising its volume plugins. Until then every call fails with a
// retriable error instead of crashing the kubelet.
//
// Its DeRegisterPlugin ignores the endpoint (upstream removes the driver
// by name); that is safe here because the watcher only de-registers the
// socket that currently owns the driver name. Its ValidatePlugin refuses a
// registered name unless the version is higher, so it also implements
// pluginwatcher.ReplacementValidator: a newer socket of a registered driver
// is checked before the old one is de-registered.
func CSI() pluginwatcher.Handler {
	return &csiHandler{upstream: csi.PluginHandler, ready: csiPluginInitialised}
}

// csiPluginFieldName is the unexported field of upstream's
// csi.RegistrationHandler that the CSI volume plugin's Init sets. It is
// read by reflection because upstream offers no other way to know; the
// tests in csi_upstream_test.go and the entries in
// hack/upstream-internals.txt fail when upstream changes it.
const csiPluginFieldName = "csiPlugin"

// csiPluginInitialised reports whether the kubelet ran the CSI volume
// plugin's Init, which sets the handler's (unexported) plugin pointer right
// after the node-info manager that RegisterPlugin uses. The pointer is
// only inspected for nil; it is never read through.
func csiPluginInitialised() bool {
	f, err := csiPluginField(csi.PluginHandler)
	return err == nil && !f.IsNil()
}

// csiPluginField returns h's plugin pointer field, or an error saying how
// upstream's RegistrationHandler no longer has it.
func csiPluginField(h *csi.RegistrationHandler) (reflect.Value, error) {
	f := reflect.ValueOf(h).Elem().FieldByName(csiPluginFieldName)
	switch {
	case !f.IsValid():
		return reflect.Value{}, fmt.Errorf("k8s.io/kubernetes/pkg/volume/csi.RegistrationHandler has no field %s: "+
			"this nodeplug cannot tell when the kubelet's CSI volume plugin is initialised (see hack/upstream-internals.txt)", csiPluginFieldName)
	case f.Kind() != reflect.Pointer:
		return reflect.Value{}, fmt.Errorf("k8s.io/kubernetes/pkg/volume/csi.RegistrationHandler.%s is a %s, not a pointer: "+
			"this nodeplug cannot tell when the kubelet's CSI volume plugin is initialised (see hack/upstream-internals.txt)", csiPluginFieldName, f.Type())
	}
	return f, nil
}

// notReady is the error of a call made before the CSI volume plugin is
// initialised: errCSINotReady, which the watcher retries, or, when the
// upstream field is gone, an error that says so instead of a retry that
// would never end quietly.
func notReady() error {
	if _, err := csiPluginField(csi.PluginHandler); err != nil {
		return err
	}
	return errCSINotReady
}

func (h *csiHandler) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	if !h.ready() {
		return notReady()
	}
	return h.upstream.ValidatePlugin(ctx, name, endpoint, versions)
}

// ValidateReplacement implements pluginwatcher.ReplacementValidator.
// Upstream's ValidatePlugin refuses a registered driver name unless the new
// socket's highest version is higher, so while the old socket is registered
// this checks only what upstream checks of the versions themselves (through
// the same HighestSupportedVersion): that they include a v1.x version. Upstream's own
// ValidatePlugin runs again once the old socket is de-registered.
func (h *csiHandler) ValidateReplacement(_ context.Context, name, endpoint string, versions []string) error {
	if !h.ready() {
		return notReady()
	}
	if _, err := utilversion.HighestSupportedVersion(versions); err != nil {
		return fmt.Errorf("CSI driver %s at %s offers no supported CSI version: %w", name, endpoint, err)
	}
	return nil
}

func (h *csiHandler) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, timeout *time.Duration) error {
	if !h.ready() {
		return notReady()
	}
	return h.upstream.RegisterPlugin(ctx, name, endpoint, versions, timeout)
}

func (h *csiHandler) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	if h.ready() {
		h.upstream.DeRegisterPlugin(ctx, name, endpoint)
	}
}
