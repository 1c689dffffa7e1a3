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

// New returns the Watcher of the tree at root: it records every unix socket
// below root in dsw and calls enqueue for each path whose state changed. It
// never contacts plugins. Its warnings go to rep; directories it cannot
// watch are counted in m. newDirWatcher makes the directory watcher (nil:
// dirwatch.New); tests pass a dirwatchtest fake's.
func New(root string, dsw cache.DesiredStateOfWorld, enqueue func(path string), rep report.Reporter, m *metrics.Metrics,
	newDirWatcher dirwatch.NewFunc) Watcher {
	if newDirWatcher == nil {
		newDirWatcher = dirwatch.New
	}
	return &socketWatcher{root: root, dsw: dsw, enqueue: enqueue, rep: rep, metrics: m, newDirWatcher: newDirWatcher}
}
