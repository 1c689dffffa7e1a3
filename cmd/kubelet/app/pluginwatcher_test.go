//go:build !nodeplug_no_pluginwatcher

package app

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
	pluginmanagercache "k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/handlers"
)

// fakeWatcher records the handlers and expectations it is given.
type fakeWatcher struct {
	mu       sync.Mutex
	handlers map[string]pluginwatcher.Handler
	expected map[string]string
}

func (w *fakeWatcher) AddHandler(typ string, h pluginwatcher.Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers[typ] = h
}

func (w *fakeWatcher) ExpectHandler(typ, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expected[typ] = reason
}

func (w *fakeWatcher) Start(context.Context) error { return nil }

// fakeCM is the container manager's GetPluginRegistrationHandlers.
type fakeCM map[string]pluginmanagercache.PluginHandler

func (m fakeCM) GetPluginRegistrationHandlers() map[string]pluginmanagercache.PluginHandler { return m }

// draManager stands in for upstream's DRA plugin manager.
type draManager struct{ pluginwatcher.HandlerFuncs }

// TestAddDRAHandler: the DRA manager's handler reaches nodeplug's watcher
// once the container manager has started, with the DRA policy; when it
// cannot, DRA plugins are told why instead of waiting in silence; when the
// kubelet stops first nothing happens.
func TestAddDRAHandler(t *testing.T) {
	started := func(context.Context) error { return nil }
	never := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for name, tc := range map[string]struct {
		cm         handlers.ContainerManager
		started    func(context.Context) error
		stop       bool
		wantAdded  bool
		wantReason string
	}{
		"container manager started": {cm: fakeCM{pluginwatcher.DRAPlugin: &draManager{}}, started: started, wantAdded: true},
		"no container manager":      {started: started, wantReason: "no container manager"},
		"no DRA handler":            {cm: fakeCM{}, started: started, wantReason: "DRA manager is not available"},
		"the kubelet stops first":   {cm: fakeCM{pluginwatcher.DRAPlugin: &draManager{}}, started: never, stop: true},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			if tc.stop {
				cancel()
			}
			defer cancel()
			w := &fakeWatcher{handlers: map[string]pluginwatcher.Handler{}, expected: map[string]string{}}
			addDRAHandler(ctx, w, tc.cm, handlers.DRAOptions{Started: tc.started})

			h, added := w.handlers[pluginwatcher.DRAPlugin]
			if added != tc.wantAdded {
				t.Fatalf("DRA handler added: %v, want %v", added, tc.wantAdded)
			}
			if added {
				if p, ok := h.(pluginwatcher.PolicyHandler); !ok || !p.Policy().AllInstances || !p.Policy().KeepRegisteredWhenRefused {
					t.Errorf("the DRA handler %T does not ask for upstream's DRA semantics", h)
				}
			}
			reason := w.expected[pluginwatcher.DRAPlugin]
			if tc.wantReason == "" && reason != "" || !strings.Contains(reason, tc.wantReason) {
				t.Errorf("DRA plugins are told %q, want %q", reason, tc.wantReason)
			}
		})
	}
}
