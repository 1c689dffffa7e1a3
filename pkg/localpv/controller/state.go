package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// nodeState is the master's memory of one node. It is only an optimisation
// and a rate limiter: losing it on restart causes one discovery per node.
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
func (c *controller) withNode(name string, f func(*nodeState)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.nodes[name]
	if !ok {
		st = &nodeState{}
		c.nodes[name] = st
	}
	f(st)
}

// requestDiscovery asks for a discovery run on a node.
func (c *controller) requestDiscovery(name string) {
	c.withNode(name, func(st *nodeState) { st.wantDiscovery = true })
	c.queue.Add(nodeKey(name))
}

// forgetNode drops the memory of a node that is gone.
func (c *controller) forgetNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
	c.inventory.Forget(name)
	c.machines.Forget(name)
}

// firstSeen reports whether a finished Job's result is seen for the first
// time, and remembers it.
func (c *controller) firstSeen(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seenJobs[string(uid)] {
		return false
	}
	c.seenJobs[string(uid)] = true
	return true
}

func (c *controller) forgetJob(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.seenJobs, string(uid))
	delete(c.seenJobs, string(mismatchKey(uid)))
}
