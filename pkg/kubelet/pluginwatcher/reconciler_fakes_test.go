package pluginwatcher

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// fakeNet is the file system and the network of a testbed: the socket
// files that exist and the plugin behind each. It implements
// operationExecutor without connections: a pluginConn it hands out only
// names its socket.
type fakeNet struct {
	record  func(format string, args ...any)
	files   map[string]socketID
	plugins map[string]*fakePlugin
	conns   map[*pluginConn]string
}

var _ operationExecutor = &fakeNet{}

// fakePlugin is what listens on one fake socket.
type fakePlugin struct {
	info *registerapi.PluginInfo
	// probeErr is returned by the next failProbes probes (negative: all).
	probeErr   error
	failProbes int
	// failNotify is how many statuses are lost (negative: all).
	failNotify int
}

// always, as a number of failures, means every call fails.
const always = -1

func (n *fakeNet) stat(path string) (socketID, bool, error) {
	id, ok := n.files[path]
	if !ok {
		return socketID{}, false, os.ErrNotExist
	}
	return id, true, nil
}

func (n *fakeNet) Probe(_ context.Context, path string) (*registerapi.PluginInfo, *pluginConn, error) {
	p, ok := n.plugins[path]
	if !ok {
		return nil, nil, fmt.Errorf("dial %s: %w", path, errGone)
	}
	if consume(&p.failProbes) {
		return nil, nil, fmt.Errorf("probe %s: %w", path, p.probeErr)
	}
	c := &pluginConn{}
	n.conns[c] = path
	info := &registerapi.PluginInfo{Type: p.info.Type, Name: p.info.Name, Endpoint: p.info.Endpoint,
		SupportedVersions: slices.Clone(p.info.SupportedVersions)}
	return info, c, nil
}

func (n *fakeNet) Notify(_ context.Context, c *pluginConn, registered bool, _ string) error {
	path := n.conns[c]
	status := "failed"
	if registered {
		status = "ok"
	}
	if p := n.plugins[path]; p != nil && consume(&p.failNotify) {
		n.record("status %s %s (not delivered)", labelOf(path), status)
		return fmt.Errorf("notify %s: %w", path, context.DeadlineExceeded)
	}
	n.record("status %s %s", labelOf(path), status)
	return nil
}

func (n *fakeNet) RemoveStale(path string, id socketID) (bool, error) {
	if cur, ok := n.files[path]; !ok || cur != id {
		return false, nil
	}
	delete(n.files, path)
	delete(n.plugins, path)
	n.record("remove %s", labelOf(path))
	return true, nil
}

// consume reports whether a call fails with *left failures to go, and
// counts it.
func consume(left *int) bool {
	if *left > 0 {
		*left--
		return true
	}
	return *left < 0
}

// scriptedHandler logs its calls, fails those it is told to, and checks
// that DeRegisterPlugin is only called for the registered endpoint and
// RegisterPlugin only when no other endpoint of the name is registered.
type scriptedHandler struct {
	t      *testing.T
	record func(format string, args ...any)
	// fail counts the failures left per "<op> <label>" (negative: always).
	fail map[string]int
	// refuseDuplicates makes ValidatePlugin refuse a name registered at
	// another endpoint, as upstream's CSI handler does.
	refuseDuplicates bool
	registered       map[string]string // plugin name -> endpoint
}

func newScriptedHandler(refuseDuplicates bool) *scriptedHandler {
	return &scriptedHandler{fail: map[string]int{}, refuseDuplicates: refuseDuplicates, registered: map[string]string{}}
}

func (h *scriptedHandler) call(op, endpoint string) error {
	c := op + " " + labelOf(endpoint)
	h.record("%s", c)
	if n := h.fail[c]; consume(&n) {
		h.fail[c] = n
		return fmt.Errorf("%s refused", c)
	}
	return nil
}

func (h *scriptedHandler) ValidatePlugin(_ context.Context, name, endpoint string, _ []string) error {
	if err := h.call("validate", endpoint); err != nil {
		return err
	}
	if cur, ok := h.registered[name]; ok && h.refuseDuplicates && cur != endpoint {
		return fmt.Errorf("plugin %s is already registered at %s", name, cur)
	}
	return nil
}

func (h *scriptedHandler) RegisterPlugin(_ context.Context, name, endpoint string, _ []string, _ *time.Duration) error {
	if cur, ok := h.registered[name]; ok {
		h.t.Errorf("RegisterPlugin(%s, %s) while %s is registered", name, endpoint, cur)
	}
	if err := h.call("register", endpoint); err != nil {
		return err
	}
	h.registered[name] = endpoint
	return nil
}

func (h *scriptedHandler) DeRegisterPlugin(_ context.Context, name, endpoint string) {
	_ = h.call("deregister", endpoint)
	if cur := h.registered[name]; cur != endpoint {
		h.t.Errorf("DeRegisterPlugin(%s, %s), but %q is registered", name, endpoint, cur)
	}
	delete(h.registered, name)
}

// scriptedReplacer adds ReplacementValidator to a scriptedHandler.
type scriptedReplacer struct {
	*scriptedHandler
}

func (h scriptedReplacer) ValidateReplacement(_ context.Context, _, endpoint string, _ []string) error {
	return h.call("validateReplacement", endpoint)
}
