package pluginwatcher

import (
	"context"
	"sync"

	"google.golang.org/grpc/connectivity"
)

// monitors keeps the registration connection of every registered plugin
// open. When it drops (the plugin crashed or closed its listener) the
// socket is queued for a liveness check, so that a plugin that died without
// removing its socket is found without waiting for a kubelet restart: if
// the socket then refuses connections it is treated as stale.
type monitors struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
	onDrop  func(path string)
	// waitDrop is waitForDrop; tests replace it to run without connections.
	waitDrop func(ctx context.Context, conn *pluginConn) bool
}

func newMonitors(onDrop func(string)) *monitors {
	return &monitors{cancels: map[string]context.CancelFunc{}, onDrop: onDrop, waitDrop: waitForDrop}
}

// watch takes ownership of conn for the registered socket at path.
func (m *monitors) watch(ctx context.Context, path string, conn *pluginConn) {
	conn.keep = true
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	if old := m.cancels[path]; old != nil {
		old()
	}
	m.cancels[path] = cancel
	m.mu.Unlock()
	go func() {
		defer conn.closeNow()
		if m.waitDrop(ctx, conn) {
			m.onDrop(path)
		}
	}()
}

// stop ends the monitor of path, if any.
func (m *monitors) stop(path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cancel := m.cancels[path]; cancel != nil {
		cancel()
		delete(m.cancels, path)
	}
}

// waitForDrop returns true when the connection leaves READY, false when ctx
// ends first.
func waitForDrop(ctx context.Context, conn *pluginConn) bool {
	for {
		s := conn.cc.GetState()
		if s != connectivity.Ready {
			return true
		}
		if !conn.cc.WaitForStateChange(ctx, s) {
			return false
		}
	}
}
