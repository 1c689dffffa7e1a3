package controller

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// missingGauge keeps the gauge of managed PVs marked missing from the PV
// informer's events: a mark written costs one event, not a count of every
// PV of the cluster.
type missingGauge struct {
	mu sync.Mutex
	n  int
}

// count follows one event: old is the PV before it (nil for an add), obj
// after it (nil for a delete).
func (g *missingGauge) count(old, obj interface{}) {
	d := 0
	if isMissing(old) {
		d--
	}
	if isMissing(obj) {
		d++
	}
	if d == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += d
	metrics.MissingVolumes.Set(float64(g.n))
}

// isMissing reports whether obj is a managed PV marked missing.
func isMissing(obj interface{}) bool {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok || !managed(pv) {
		return false
	}
	_, marked := pv.Annotations[jobs.AnnVolumeMissing]
	return marked
}
