package publishing

import (
	"sync"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

// reported holds, per node, the strong identities of the volumes in its
// last accepted report. An identity that two nodes report at once names no
// one disk across nodes (a file system cloned into several VM images, data
// disks made from one snapshot): it proves no disk that moved between
// machines, so no PV is handed over on it and no other node's unwiped disk
// is found by it. It is in memory only: after a restart it fills as nodes
// report.
type reported struct {
	mu sync.Mutex
	// byNode are each node's identities, byID the nodes that report each:
	// a lookup reads the few nodes of one identity, not every node.
	byNode map[string][]identity.ID
	byID   map[identity.ID]map[string]bool
}

func newReported() *reported {
	return &reported{byNode: map[string][]identity.ID{}, byID: map[identity.ID]map[string]bool{}}
}

// record replaces what node reported with the accepted volumes of res.
func (r *reported) record(node string, res *validation.Result) {
	var ids []identity.ID
	for _, v := range res.Accepted {
		if v.Volume.ID.Strong() {
			ids = append(ids, v.Volume.ID)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(node)
	r.byNode[node] = ids
	for _, id := range ids {
		if r.byID[id] == nil {
			r.byID[id] = map[string]bool{}
		}
		r.byID[id][node] = true
	}
}

// forget drops what a node that is gone reported.
func (r *reported) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(node)
}

// drop removes node's identities; r.mu is held.
func (r *reported) drop(node string) {
	for _, id := range r.byNode[node] {
		delete(r.byID[id], node)
		if len(r.byID[id]) == 0 {
			delete(r.byID, id)
		}
	}
	delete(r.byNode, node)
}

// elsewhere returns a node other than node whose last report has id, the
// first in name order, or "".
func (r *reported) elsewhere(node string, id identity.ID) string {
	if id == "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first := ""
	for n := range r.byID[id] {
		if n != node && (first == "" || n < first) {
			first = n
		}
	}
	return first
}
