package watch

import (
	"context"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
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

// FSWatcher is the Watcher on the file system, through pkg/util/dirwatch.
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

// SetNewFSWatcher makes the watcher use newFS instead of fsnotify (see
// dirwatch.Options.NewFSWatcher). Tests pass a dirwatchtest.InjectFS, e.g.
// to make a directory fail; call it before Start.
func (f *FSWatcher) SetNewFSWatcher(newFS func() (dirwatch.FSWatcher, error)) {
	f.w.newFS = newFS
}
