package pluginwatcher

import (
	"maps"
	"sync"
	"time"
)

// pluginKey identifies a plugin for its handler: the handler state machine
// runs per (type, name).
type pluginKey struct {
	typ, name string
}

// instance is what the watcher learnt from one socket generation and what
// it did with it.
type instance struct {
	path     string
	rel      string
	gen      uint64
	ctime    int64
	seen     time.Time
	key      pluginKey
	endpoint string
	versions []string
	handler  Handler
	// registered is true for the one instance per key that the handler
	// currently knows (the owner).
	registered bool
	// notified is true once NotifyRegistrationStatus(true) was delivered.
	notified bool
	// standby is set once the instance lost an election; its registration
	// latency is then not meaningful.
	standby bool
	// verify asks for a liveness check: the monitored connection dropped.
	verify bool
	// rejected marks a generation refused for good (identity policy).
	rejected bool
	// retryAt excludes an instance whose registration failed from owner
	// election until its backoff expires.
	retryAt time.Time
}

// newerThan orders instances by socket change time, then by observation.
func (i instance) newerThan(o instance) bool {
	if i.ctime != o.ctime {
		return i.ctime > o.ctime
	}
	return i.gen > o.gen
}

// actualStateOfWorld records probed sockets and, per plugin key, which one
// is registered with the handler. It is safe for concurrent use; callers
// serialise changes per key through the reconciler's key gate.
type actualStateOfWorld interface {
	Get(path string) (instance, bool)
	Put(inst instance)
	// Update applies fn to the instance at path atomically and reports
	// whether it exists. fn must only change the fields it owns.
	Update(path string, fn func(*instance)) bool
	Delete(path string)
	// Owner returns the registered instance of key.
	Owner(key pluginKey) (instance, bool)
	// Elect returns the newest instance of key that may own it at now:
	// not rejected and not backing off.
	Elect(key pluginKey, now time.Time) (instance, bool)
	// RegisteredByType counts registered instances per plugin type.
	RegisteredByType() map[string]int
}

type actualState struct {
	mu     sync.RWMutex
	byPath map[string]instance
	byKey  map[pluginKey]map[string]struct{}
	// registered counts registered instances per type, kept up to date by
	// every change so that RegisteredByType costs O(types), not O(sockets).
	registered map[string]int
}

var _ actualStateOfWorld = &actualState{}

func newActualState() *actualState {
	return &actualState{byPath: map[string]instance{}, byKey: map[pluginKey]map[string]struct{}{}, registered: map[string]int{}}
}

func (a *actualState) Get(path string) (instance, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	i, ok := a.byPath[path]
	return i, ok
}

func (a *actualState) Put(inst instance) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deleteLocked(inst.path)
	a.byPath[inst.path] = inst
	a.count(inst, 1)
	set := a.byKey[inst.key]
	if set == nil {
		set = map[string]struct{}{}
		a.byKey[inst.key] = set
	}
	set[inst.path] = struct{}{}
}

func (a *actualState) Update(path string, fn func(*instance)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, ok := a.byPath[path]
	if !ok {
		return false
	}
	a.count(i, -1)
	key := i.key
	fn(&i)
	i.key = key // the key indexes byKey and must not change in place
	a.byPath[path] = i
	a.count(i, 1)
	return true
}

func (a *actualState) Delete(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deleteLocked(path)
}

func (a *actualState) deleteLocked(path string) {
	old, ok := a.byPath[path]
	if !ok {
		return
	}
	delete(a.byPath, path)
	a.count(old, -1)
	if set := a.byKey[old.key]; set != nil {
		delete(set, path)
		if len(set) == 0 {
			delete(a.byKey, old.key)
		}
	}
}

func (a *actualState) Owner(key pluginKey) (instance, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for p := range a.byKey[key] {
		if i := a.byPath[p]; i.registered {
			return i, true
		}
	}
	return instance{}, false
}

func (a *actualState) Elect(key pluginKey, now time.Time) (instance, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var best instance
	found := false
	for p := range a.byKey[key] {
		i := a.byPath[p]
		if i.rejected || now.Before(i.retryAt) {
			continue
		}
		if !found || i.newerThan(best) {
			best, found = i, true
		}
	}
	return best, found
}

func (a *actualState) RegisteredByType() map[string]int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return maps.Clone(a.registered)
}

// count adds delta to the registered count of i's type if i is registered.
func (a *actualState) count(i instance, delta int) {
	if !i.registered {
		return
	}
	if a.registered[i.key.typ] += delta; a.registered[i.key.typ] == 0 {
		delete(a.registered, i.key.typ)
	}
}
