package cache

import (
	"strings"
	"sync"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
)

// DesiredSocket is a socket file that exists in the watched tree.
type DesiredSocket struct {
	Path string
	// Rel is Path relative to the watched directory, "/"-separated.
	Rel string
	ID  socket.ID
	// Gen changes whenever the file at Path is (or may have been) replaced.
	Gen uint64
	// Seen is when this generation was first observed; registration latency
	// is measured from here.
	Seen time.Time
}

// DesiredStateOfWorld is the set of socket files the watcher has observed.
// It is written by the fs watcher and read by the reconciler. It is safe for
// concurrent use.
type DesiredStateOfWorld interface {
	// Observe records that path holds a socket with id. A new path or a
	// changed id starts a new generation. It reports whether that happened.
	Observe(path, rel string, id socket.ID) bool
	// Forget removes path; it is a no-op when path is unknown.
	Forget(path string) bool
	// ForgetTree removes dir and every path below it and returns them. A
	// dir that is a known socket is removed alone, in constant time.
	ForgetTree(dir string) []string
	// Get returns the entry for path.
	Get(path string) (DesiredSocket, bool)
	// Paths lists every known path.
	Paths() []string
}

type desiredState struct {
	mu      sync.RWMutex
	sockets map[string]DesiredSocket
	gen     uint64
	now     func() time.Time
}

var _ DesiredStateOfWorld = &desiredState{}

// NewDesiredStateOfWorld returns an empty desired state that stamps new
// generations with now (time.Now when nil).
func NewDesiredStateOfWorld(now func() time.Time) DesiredStateOfWorld {
	if now == nil {
		now = time.Now
	}
	return &desiredState{sockets: map[string]DesiredSocket{}, now: now}
}

func (d *desiredState) Observe(path, rel string, id socket.ID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, ok := d.sockets[path]
	if ok && old.ID == id {
		return false
	}
	d.gen++
	d.sockets[path] = DesiredSocket{Path: path, Rel: rel, ID: id, Gen: d.gen, Seen: d.now()}
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
	if _, ok := d.sockets[dir]; ok {
		// A socket has nothing below it: no walk over every path (and no
		// write lock held for it) per removed socket, which a plugin
		// churning sockets would otherwise cost every reader.
		delete(d.sockets, dir)
		return []string{dir}
	}
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

func (d *desiredState) Get(path string) (DesiredSocket, bool) {
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
