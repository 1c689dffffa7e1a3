package reconciler

import (
	"sync"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
)

// keyGate serialises handler calls per plugin key without blocking attempts:
// a path that finds its key busy is parked and re-queued on unlock.
type keyGate struct {
	mu      sync.Mutex
	busy    map[cache.PluginKey]map[string]struct{}
	requeue func(path string)
}

func newKeyGate(requeue func(string)) *keyGate {
	return &keyGate{busy: map[cache.PluginKey]map[string]struct{}{}, requeue: requeue}
}

func (g *keyGate) tryLock(key cache.PluginKey, path string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if waiters, ok := g.busy[key]; ok {
		waiters[path] = struct{}{}
		return false
	}
	g.busy[key] = map[string]struct{}{}
	return true
}

func (g *keyGate) unlock(key cache.PluginKey) {
	g.mu.Lock()
	waiters := g.busy[key]
	delete(g.busy, key)
	g.mu.Unlock()
	for p := range waiters {
		g.requeue(p)
	}
}
