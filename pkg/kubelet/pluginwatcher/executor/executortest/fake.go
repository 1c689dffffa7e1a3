package executortest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

// Always, as a number of failures of a FakePlugin, means every call fails.
const Always = -1

// FakePlugin is what listens on one socket of a FakeExecutor.
type FakePlugin struct {
	Info *registerapi.PluginInfo
	// ProbeErr is returned by the next FailProbes probes (Always: all).
	ProbeErr   error
	FailProbes int
	// FailNotify is how many statuses are lost (Always: all).
	FailNotify int
}

// FakeExecutor is an executor.Executor and a file system of socket files without
// any socket or connection: Files are the socket files that exist, Plugins
// what answers on each. A Conn it hands out only names its socket. It is
// safe for concurrent use; tests change Files and Plugins between calls.
type FakeExecutor struct {
	mu      sync.Mutex
	Files   map[string]socket.ID
	Plugins map[string]*FakePlugin
	// Record, if set, is told of every status sent ("status", with detail
	// "ok" or "failed" and " (not delivered)" when it was lost) and every
	// file removed ("remove", no detail).
	Record func(op, path, detail string)
	conns  map[*executor.Conn]string
}

var _ executor.Executor = &FakeExecutor{}

// NewFakeExecutor returns a FakeExecutor with no files.
func NewFakeExecutor() *FakeExecutor {
	return &FakeExecutor{Files: map[string]socket.ID{}, Plugins: map[string]*FakePlugin{}, conns: map[*executor.Conn]string{}}
}

// Stat is socket.Lstat on Files.
func (f *FakeExecutor) Stat(path string) (socket.ID, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.Files[path]
	if !ok {
		return socket.ID{}, false, os.ErrNotExist
	}
	return id, true, nil
}

// Probe implements executor.Executor.
func (f *FakeExecutor) Probe(_ context.Context, path string) (*registerapi.PluginInfo, *executor.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.Plugins[path]
	if !ok {
		return nil, nil, fmt.Errorf("dial %s: %w", path, executor.ErrGone)
	}
	if consume(&p.FailProbes) {
		return nil, nil, fmt.Errorf("probe %s: %w", path, p.ProbeErr)
	}
	c := &executor.Conn{}
	f.conns[c] = path
	info := &registerapi.PluginInfo{Type: p.Info.Type, Name: p.Info.Name, Endpoint: p.Info.Endpoint,
		SupportedVersions: slices.Clone(p.Info.SupportedVersions)}
	return info, c, nil
}

// Notify implements executor.Executor.
func (f *FakeExecutor) Notify(_ context.Context, c *executor.Conn, registered bool, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := f.conns[c]
	status := "failed"
	if registered {
		status = "ok"
	}
	if p := f.Plugins[path]; p != nil && consume(&p.FailNotify) {
		f.record("status", path, status+" (not delivered)")
		return fmt.Errorf("notify %s: %w", path, context.DeadlineExceeded)
	}
	f.record("status", path, status)
	return nil
}

// RemoveStale implements executor.Executor.
func (f *FakeExecutor) RemoveStale(path string, id socket.ID) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.Files[path]; !ok || cur != id {
		return false, nil
	}
	delete(f.Files, path)
	delete(f.Plugins, path)
	f.record("remove", path, "")
	return true, nil
}

func (f *FakeExecutor) record(op, path, detail string) {
	if f.Record != nil {
		f.Record(op, path, detail)
	}
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

// FakeMonitor is an executor.Monitor without connections: it only remembers which
// paths it watches. Tests report a dropped connection to the reconciler
// themselves.
type FakeMonitor struct {
	mu      sync.Mutex
	watched map[string]bool
}

var _ executor.Monitor = &FakeMonitor{}

// NewFakeMonitor returns a FakeMonitor that watches nothing.
func NewFakeMonitor() *FakeMonitor {
	return &FakeMonitor{watched: map[string]bool{}}
}

// Watch implements executor.Monitor.
func (m *FakeMonitor) Watch(_ context.Context, path string, conn *executor.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	conn.Keep()
	m.watched[path] = true
}

// Stop implements executor.Monitor.
func (m *FakeMonitor) Stop(path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.watched, path)
}

// Watching reports whether path is watched.
func (m *FakeMonitor) Watching(path string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.watched[path]
}
