package reconciler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
)

// always, as a number of failures, means every call fails.
const always = -1

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
// that DeRegisterPlugin is only called for a registered endpoint and, unless
// it keeps all instances (policy.AllInstances), RegisterPlugin only when no
// other endpoint of the name is registered.
type scriptedHandler struct {
	t      *testing.T
	record func(format string, args ...any)
	// fail counts the failures left per "<op> <label>" (negative: always).
	fail map[string]int
	// refuseDuplicates makes ValidatePlugin refuse a name registered at
	// another endpoint, as upstream's CSI handler does.
	refuseDuplicates bool
	// policy is what the handler asks the watcher for (scriptedPolicy).
	policy     cache.Policy
	registered map[string]string // endpoint -> plugin name
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

// endpointsOf returns the registered endpoints of plugin name, sorted.
func (h *scriptedHandler) endpointsOf(name string) []string {
	var eps []string
	for ep, n := range h.registered {
		if n == name {
			eps = append(eps, ep)
		}
	}
	slices.Sort(eps)
	return eps
}

func (h *scriptedHandler) ValidatePlugin(_ context.Context, name, endpoint string, _ []string) error {
	if err := h.call("validate", endpoint); err != nil {
		return err
	}
	if cur := h.endpointsOf(name); len(cur) > 0 && h.refuseDuplicates && !slices.Contains(cur, endpoint) {
		return fmt.Errorf("plugin %s is already registered at %s", name, cur[0])
	}
	return nil
}

func (h *scriptedHandler) RegisterPlugin(_ context.Context, name, endpoint string, _ []string, _ *time.Duration) error {
	if _, dup := h.registered[endpoint]; dup {
		h.t.Errorf("RegisterPlugin(%s, %s): endpoint already registered", name, endpoint)
	}
	if cur := h.endpointsOf(name); len(cur) > 0 && !h.policy.AllInstances {
		h.t.Errorf("RegisterPlugin(%s, %s) while %s is registered", name, endpoint, cur)
	}
	if err := h.call("register", endpoint); err != nil {
		return err
	}
	h.registered[endpoint] = name
	return nil
}

func (h *scriptedHandler) DeRegisterPlugin(_ context.Context, name, endpoint string) {
	_ = h.call("deregister", endpoint)
	if cur, ok := h.registered[endpoint]; !ok || cur != name {
		h.t.Errorf("DeRegisterPlugin(%s, %s), but %q is registered", name, endpoint, h.endpointsOf(name))
	}
	delete(h.registered, endpoint)
}

// scriptedPolicy adds PolicyHandler to a scriptedHandler.
type scriptedPolicy struct {
	*scriptedHandler
}

func (h scriptedPolicy) Policy() cache.Policy { return h.policy }

// scriptedReplacer adds ReplacementValidator to a scriptedHandler.
type scriptedReplacer struct {
	*scriptedHandler
}

func (h scriptedReplacer) ValidateReplacement(_ context.Context, _, endpoint string, _ []string) error {
	return h.call("validateReplacement", endpoint)
}
