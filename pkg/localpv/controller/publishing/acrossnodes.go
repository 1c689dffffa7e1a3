package publishing

import (
	"maps"
	"slices"
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
	mu     sync.Mutex
	byNode map[string]map[identity.ID]bool
}

func newReported() *reported { return &reported{byNode: map[string]map[identity.ID]bool{}} }

// record replaces what node reported with the accepted volumes of res.
func (r *reported) record(node string, res *validation.Result) {
	ids := map[identity.ID]bool{}
	for _, v := range res.Accepted {
		if v.Volume.ID.Strong() {
			ids[v.Volume.ID] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byNode[node] = ids
}

// forget drops what a node that is gone reported.
func (r *reported) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byNode, node)
}

// elsewhere returns a node other than node whose last report has id, in
// name order, or "".
func (r *reported) elsewhere(node string, id identity.ID) string {
	if id == "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range slices.Sorted(maps.Keys(r.byNode)) {
		if n != node && r.byNode[n][id] {
			return n
		}
	}
	return ""
}
