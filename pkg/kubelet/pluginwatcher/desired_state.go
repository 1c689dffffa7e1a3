package pluginwatcher

import (
	"strings"
	"sync"
	"time"
)

// socketID identifies one socket inode. Inode numbers are reused quickly on
// Linux, so the change time is part of the identity. A socket removed and
// re-created in place is also seen as a Remove event, which forgets the old
// generation before the new one is observed.
type socketID struct {
	dev, ino uint64
	ctime    int64 // nanoseconds
}

// desiredSocket is a socket file that exists in the watched tree.
type desiredSocket struct {
	path string
	rel  string
	id   socketID
	// gen changes whenever the file at path is (or may have been) replaced.
	gen uint64
	// seen is when this generation was first observed; registration latency
	// is measured from here.
	seen time.Time
}

// desiredStateOfWorld is the set of socket files the watcher has observed.
// It is written by the fs watcher and read by the reconciler. It is safe for
// concurrent use.
type desiredStateOfWorld interface {
	// Observe records that path holds a socket with id. A new path or a
	// changed id starts a new generation. It reports whether that happened.
	Observe(path, rel string, id socketID) bool
	// Forget removes path; it is a no-op when path is unknown.
	Forget(path string) bool
	// ForgetTree removes dir and every path below it and returns them.
	ForgetTree(dir string) []string
	// Get returns the entry for path.
	Get(path string) (desiredSocket, bool)
	// Paths lists every known path.
	Paths() []string
}

type desiredState struct {
	mu      sync.RWMutex
	sockets map[string]desiredSocket
	gen     uint64
	now     func() time.Time
}

var _ desiredStateOfWorld = &desiredState{}

func newDesiredState() *desiredState {
	return &desiredState{sockets: map[string]desiredSocket{}, now: time.Now}
}

func (d *desiredState) Observe(path, rel string, id socketID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.sockets[path]
	if ok && old.id == id {
		return false
	}
	d.gen++
	d.sockets[path] = desiredSocket{path: path, rel: rel, id: id, gen: d.gen, seen: d.now()}
	return true
}

func (d *desiredState) Forget(path string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.sockets[path]
	delete(d.sockets, path)
	return ok
}

func (d *desiredState) ForgetTree(dir string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []string
	for p := range d.sockets {
		if p == dir || strings.HasPrefix(p, prefix) {
			out = append(out, p)
			delete(d.sockets, p)
		}
	}
	return out
}

func (d *desiredState) Get(path string) (desiredSocket, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	s, ok := d.sockets[path]
	return s, ok
}

func (d *desiredState) Paths() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]string, 0, len(d.sockets))
	for p := range d.sockets {
		out = append(out, p)
	}
	return out
}
