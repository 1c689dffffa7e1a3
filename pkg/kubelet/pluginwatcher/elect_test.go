package pluginwatcher

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// dupRefusingHandler refuses in ValidatePlugin a name that is registered,
// as upstream's CSI handler does for a version that is not higher.
type dupRefusingHandler struct {
	*recordingHandler
}

func (h dupRefusingHandler) ValidatePlugin(ctx context.Context, name, endpoint string, versions []string) error {
	if err := h.recordingHandler.ValidatePlugin(ctx, name, endpoint, versions); err != nil {
		return err
	}
	if cur, ok := h.current(name); ok {
		return fmt.Errorf("plugin %s is already registered at %s", name, cur)
	}
	return nil
}

// replacingHandler is a dupRefusingHandler with a ReplacementValidator.
type replacingHandler struct {
	dupRefusingHandler
}

func (h replacingHandler) ValidateReplacement(_ context.Context, name, endpoint string, versions []string) error {
	h.enter("validateReplacement", name, endpoint)
	defer h.leave(name)
	_, err := NegotiateVersion(versions, h.supported)
	return err
}

// TestFailingUpgradeKeepsOwner: a newer socket of a registered plugin that
// keeps failing validation never de-registers the working socket, on any
// retry. A newer socket that validates takes over: it is validated before
// the old one is de-registered, and registered after.
func TestFailingUpgradeKeepsOwner(t *testing.T) {
	tests := []struct {
		name string
		wrap func(*recordingHandler) Handler
		// wantTakeover: a good newer socket replaces the live owner.
		// Otherwise it waits until the owner's socket goes.
		wantTakeover bool
		// wantOrder are the handler calls for the good newer socket.
		wantOrder []string
	}{
		{
			name:         "handler accepting duplicates",
			wrap:         func(h *recordingHandler) Handler { return h },
			wantTakeover: true,
			wantOrder:    []string{"validate new", "deregister old", "validate new", "register new"},
		},
		{
			name:         "handler refusing duplicates, with ValidateReplacement",
			wrap:         func(h *recordingHandler) Handler { return replacingHandler{dupRefusingHandler{h}} },
			wantTakeover: true,
			wantOrder:    []string{"validateReplacement new", "deregister old", "validate new", "register new"},
		},
		{
			name: "handler refusing duplicates, without ValidateReplacement",
			wrap: func(h *recordingHandler) Handler { return dupRefusingHandler{h} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := testDir(t)
			h := newRecordingHandler(t)
			h.supported = []string{"v1"}
			startWatcher(t, dir, fastOptions(), testType, tc.wrap(h))
			owner := func() string { ep, _ := h.current("eta"); return ep }

			old := startPlugin(t, filepath.Join(dir, "eta.1000.sock"), pluginInfo(testType, "eta", "v1"))
			if s := old.waitStatus(t); !s.PluginRegistered {
				t.Fatalf("old socket not registered: %+v", s)
			}
			bad := startPlugin(t, filepath.Join(dir, "eta.2000.sock"), pluginInfo(testType, "eta", "v9"))
			for i := range 3 {
				if s := bad.waitStatus(t); s.PluginRegistered {
					t.Fatalf("attempt %d: bad upgrade registered: %+v", i+1, s)
				}
			}
			if n := h.count("deregister", "eta"); n != 0 || owner() != old.path {
				t.Fatalf("bad upgrade took the working socket down: %d de-registrations, owner %q", n, owner())
			}
			bad.stop()

			mark := h.callCount()
			good := startPlugin(t, filepath.Join(dir, "eta.3000.sock"), pluginInfo(testType, "eta", "v1"))
			if !tc.wantTakeover {
				if s := good.waitStatus(t); s.PluginRegistered {
					t.Fatalf("newer socket replaced a live owner the handler refuses to duplicate: %+v", s)
				}
				old.stop()
				eventually(t, "newer socket takes over once the old one goes", func() bool { return owner() == good.path })
				return
			}
			if s := good.waitStatus(t); !s.PluginRegistered {
				t.Fatalf("good upgrade not registered: %+v", s)
			}
			if got := h.callsSince(mark, map[string]string{old.path: "old", good.path: "new"}); !slices.Equal(got, tc.wantOrder) {
				t.Errorf("handler calls %q, want %q", got, tc.wantOrder)
			}
		})
	}
}

func (h *recordingHandler) callCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

// callsSince returns the calls from index i on as "<op> <label>", with
// endpoints replaced by their labels.
func (h *recordingHandler) callsSince(i int, labels map[string]string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls[i:] {
		out = append(out, c.op+" "+labels[c.endpoint])
	}
	return out
}
