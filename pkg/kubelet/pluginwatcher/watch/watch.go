package watch

import (
	"context"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
)

// defaultDirPermissions are those of the plugin directory when the watcher
// creates it.
const defaultDirPermissions = 0o750

// Watcher keeps the desired state of the world in line with the socket
// files below one directory.
type Watcher interface {
	// Start creates the directory if needed, watches it and scans it, so
	// that sockets left by a previous kubelet are found (restart
	// recovery). It returns once the scan is done.
	Start(ctx context.Context) error
	// Run handles file events until ctx ends. Call it after Start.
	Run(ctx context.Context)
}

// FSWatcher is the Watcher on fsnotify.
type FSWatcher struct {
	w *fsWatcher
}

var _ Watcher = &FSWatcher{}

// New returns the Watcher of the tree at root: it records every unix socket
// below root in dsw and calls enqueue for each path whose state changed. It
// never contacts plugins. Its warnings go to rep; directories it cannot
// watch are counted in m.
func New(root string, dsw cache.DesiredStateOfWorld, enqueue func(path string), rep report.Reporter, m *metrics.Metrics) *FSWatcher {
	return &FSWatcher{w: newFSWatcher(root, dsw, enqueue, rep, m)}
}

// Start implements Watcher.
func (f *FSWatcher) Start(ctx context.Context) error { return f.w.start(ctx) }

// Run implements Watcher.
func (f *FSWatcher) Run(ctx context.Context) { f.w.run(ctx) }

// InterceptAddWatch makes the watcher add each directory to fsnotify
// through fn, which is given the directory and fsnotify's own add. Tests
// use it to make a directory fail; call it before Start.
func (f *FSWatcher) InterceptAddWatch(fn func(dir string, add func(dir string) error) error) {
	f.w.addWatch = func(dir string) error { return fn(dir, f.w.fsn.Add) }
}
