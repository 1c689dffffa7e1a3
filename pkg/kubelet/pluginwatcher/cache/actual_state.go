package cache

import (
	"maps"
	"sync"
	"time"
)

// PluginKey identifies a plugin for its handler: the handler state machine
// runs per (type, name).
type PluginKey struct {
	Type, Name string
}

// Instance is what the watcher learnt from one socket generation and what
// it did with it.
type Instance struct {
	Path     string
	Rel      string
	Gen      uint64
	Ctime    int64
	Seen     time.Time
	Key      PluginKey
	Endpoint string
	Versions []string
	Handler  Handler
	// Registered is true for the instances of a key that the handler
	// currently knows: the one owner, or, under Policy.AllInstances, every
	// instance registered so far.
	Registered bool
	// Notified is true once NotifyRegistrationStatus(true) was delivered.
	Notified bool
	// Standby is set once the instance lost an election; its registration
	// latency is then not meaningful.
	Standby bool
	// Verify asks for a liveness check: the monitored connection dropped.
	Verify bool
	// Rejected marks a generation refused for good (identity policy).
	Rejected bool
	// RetryAt excludes an instance whose registration failed from owner
	// election until its backoff expires.
	RetryAt time.Time
}

// NewerThan orders Instances by socket change time, then by observation.
func (i Instance) NewerThan(o Instance) bool {
	if i.Ctime != o.Ctime {
		return i.Ctime > o.Ctime
	}
	return i.Gen > o.Gen
}

// ActualStateOfWorld records probed sockets and, per plugin key, which one
// is registered with the handler. It is safe for concurrent use; callers
// serialise changes per key through the reconciler's key gate.
type ActualStateOfWorld interface {
	Get(path string) (Instance, bool)
	Put(inst Instance)
	// Update applies fn to the instance at path atomically and reports
	// whether it exists. fn must only change the fields it owns.
	Update(path string, fn func(*Instance)) bool
	Delete(path string)
	// Owner returns the registered instance of key (one of them under
	// Policy.AllInstances).
	Owner(key PluginKey) (Instance, bool)
	// Registered returns every registered instance of key.
	Registered(key PluginKey) []Instance
	// Elect returns the newest instance of key that may own it at now:
	// not rejected and not backing off.
	Elect(key PluginKey, now time.Time) (Instance, bool)
	// RegisteredByType counts registered Instances per plugin type.
	RegisteredByType() map[string]int
	// List returns a copy of every instance, in no particular order.
	List() []Instance
}

type actualState struct {
	mu     sync.RWMutex
	byPath map[string]Instance
	byKey  map[PluginKey]map[string]struct{}
	// registered counts registered Instances per type, kept up to date by
	// every change so that RegisteredByType costs O(types), not O(sockets).
	registered map[string]int
}

var _ ActualStateOfWorld = &actualState{}

// NewActualStateOfWorld returns an empty actual state.
func NewActualStateOfWorld() ActualStateOfWorld {
	return newActualState()
}

func newActualState() *actualState {
	return &actualState{byPath: map[string]Instance{}, byKey: map[PluginKey]map[string]struct{}{}, registered: map[string]int{}}
}

func (a *actualState) Get(path string) (Instance, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	i, ok := a.byPath[path]
	return i, ok
}

func (a *actualState) Put(inst Instance) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deleteLocked(inst.Path)
	a.byPath[inst.Path] = inst
	a.count(inst, 1)
	set := a.byKey[inst.Key]
	if set == nil {
		set = map[string]struct{}{}
		a.byKey[inst.Key] = set
	}
	set[inst.Path] = struct{}{}
}

func (a *actualState) Update(path string, fn func(*Instance)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, ok := a.byPath[path]
	if !ok {
		return false
	}
	a.count(i, -1)
	key := i.Key
	fn(&i)
	i.Key = key // the key indexes byKey and must not change in place
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
	if set := a.byKey[old.Key]; set != nil {
		delete(set, path)
		if len(set) == 0 {
			delete(a.byKey, old.Key)
		}
	}
}

func (a *actualState) Owner(key PluginKey) (Instance, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for p := range a.byKey[key] {
		if i := a.byPath[p]; i.Registered {
			return i, true
		}
	}
	return Instance{}, false
}

func (a *actualState) Registered(key PluginKey) []Instance {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []Instance
	for p := range a.byKey[key] {
		if i := a.byPath[p]; i.Registered {
			out = append(out, i)
		}
	}
	return out
}

func (a *actualState) Elect(key PluginKey, now time.Time) (Instance, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var best Instance
	found := false
	for p := range a.byKey[key] {
		i := a.byPath[p]
		if i.Rejected || now.Before(i.RetryAt) {
			continue
		}
		if !found || i.NewerThan(best) {
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

func (a *actualState) List() []Instance {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]Instance, 0, len(a.byPath))
	for _, i := range a.byPath {
		out = append(out, i)
	}
	return out
}

// count adds delta to the registered count of i's type if i is registered.
func (a *actualState) count(i Instance, delta int) {
	if !i.Registered {
		return
	}
	if a.registered[i.Key.Type] += delta; a.registered[i.Key.Type] == 0 {
		delete(a.registered, i.Key.Type)
	}
}
