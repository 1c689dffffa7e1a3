package discoveryjobs

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// nodeState is the runner's memory of one node.
type nodeState struct {
	// wantDiscovery is set when a discovery run was requested and no Job
	// for the request exists yet.
	wantDiscovery bool
	// notBefore delays the next discovery Job (rate limit or backoff).
	notBefore time.Time
	// reserved says a rate-limiter token is held for notBefore.
	reserved bool
	// failures counts consecutive discovery runs that failed or whose
	// shards disagreed.
	failures int
	// processed is the last discovery Job whose result was consumed.
	processed types.UID
	// generation is the last NodeDiskState generation acted on.
	generation int64
	// shards is the number of containers the node's discovery pods need,
	// when a run asked for more than the configured number.
	shards int
}

// withNode runs f with the node's state, under the lock.
func (r *runner) withNode(name string, f func(*nodeState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.nodes[name]
	if !ok {
		st = &nodeState{}
		r.nodes[name] = st
	}
	f(st)
}

func (r *runner) Request(node string) {
	r.withNode(node, func(st *nodeState) { st.wantDiscovery = true })
}

func (r *runner) Notice(node string, generation int64) bool {
	changed := false
	r.withNode(node, func(st *nodeState) {
		if generation == 0 || generation != st.generation {
			st.generation = generation
			st.wantDiscovery = true
			changed = true
		}
	})
	return changed
}

func (r *runner) Skip(node string) {
	r.withNode(node, func(st *nodeState) { st.wantDiscovery = false })
}

func (r *runner) Forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, node)
}

// retry requests another discovery run after the backoff of the node's
// consecutive unusable runs.
func (r *runner) retry(name string) {
	now := r.Clock.Now()
	r.withNode(name, func(st *nodeState) {
		st.failures++
		st.wantDiscovery = true
		st.notBefore = now.Add(r.backoff(st.failures))
	})
}
