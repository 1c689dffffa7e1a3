package reconciler

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
)

// handlerWaits records, per socket path, the plugin type its last attempt
// looked up a handler for, until the lookup succeeds or the socket goes.
// It holds one entry per socket file at most.
type handlerWaits struct {
	mu     sync.Mutex
	byPath map[string]string
}

func newHandlerWaits() *handlerWaits {
	return &handlerWaits{byPath: map[string]string{}}
}

func (w *handlerWaits) add(path, pluginType string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byPath[path] = pluginType
}

func (w *handlerWaits) remove(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byPath, path)
}

// take removes and returns the paths waiting for pluginType, sorted, so
// that they are retried in the same order every time.
func (w *handlerWaits) take(pluginType string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var paths []string
	for p, t := range w.byPath {
		if t == pluginType {
			paths = append(paths, p)
			delete(w.byPath, p)
		}
	}
	sort.Strings(paths)
	return paths
}

// noHandler fails an attempt whose plugin type has no handler. The plugin
// is told why: for a type the kubelet serves but whose handler is not
// there yet (Dependencies.Pending), with the reason and the promise of a
// retry when it arrives; otherwise that the type is unknown. Either way
// the socket backs off and HandlerAdded queues it at once.
func (r *reconciler) noHandler(ctx context.Context, conn *executor.Conn, d cache.DesiredSocket, pluginType, name string) time.Duration {
	if why, ok := r.pending(pluginType); ok {
		err := fmt.Errorf("plugin type %q is not served yet: %s; the registration is retried as soon as it is", pluginType, why)
		return r.failed(ctx, conn, d.Path, d.Gen, pluginType, name, metrics.ReasonHandlerPending, err)
	}
	err := fmt.Errorf("no handler for plugin type %q", pluginType)
	return r.failed(ctx, conn, d.Path, d.Gen, metrics.UnknownType, name, metrics.ReasonNoHandler, err)
}

// HandlerAdded implements Reconciler.
func (r *reconciler) HandlerAdded(pluginType string) {
	paths := r.waiting.take(pluginType)
	for _, p := range paths {
		r.retries.forget(p)
		r.enqueue(p)
	}
	if len(paths) > 0 {
		r.rep.Debug("Handler added, retrying the plugin sockets that waited for it", "pluginType", pluginType, "sockets", len(paths))
	}
}
