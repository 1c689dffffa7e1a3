package executor

import (
	"context"
	"sync"

	"google.golang.org/grpc/connectivity"
)

// Monitor keeps the registration connection of every registered plugin
// open and reports when one drops.
type Monitor interface {
	// Watch takes ownership of conn, the connection of the registered
	// socket at path: Close on conn no longer closes it. A previous watch
	// of path ends.
	Watch(ctx context.Context, path string, conn *Conn)
	// Stop ends the watch of path, if any, and closes its connection.
	Stop(path string)
}

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
	waitDrop func(ctx context.Context, conn *Conn) bool
}

var _ Monitor = &monitors{}

// NewMonitor returns the Monitor that calls onDrop(path) when the watched
// connection of path leaves READY.
func NewMonitor(onDrop func(path string)) Monitor {
	return &monitors{cancels: map[string]context.CancelFunc{}, onDrop: onDrop, waitDrop: waitForDrop}
}

// Watch implements Monitor.
func (m *monitors) Watch(ctx context.Context, path string, conn *Conn) {
	conn.Keep()
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

// Stop implements Monitor.
func (m *monitors) Stop(path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cancel := m.cancels[path]; cancel != nil {
		cancel()
		delete(m.cancels, path)
	}
}

// waitForDrop returns true when the connection leaves READY, false when ctx
// ends first.
func waitForDrop(ctx context.Context, conn *Conn) bool {
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
