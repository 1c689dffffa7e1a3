package controller

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// TestMissingGaugeFollowsEvents (issue 37 item 2): the gauge of PVs whose
// disk is missing follows the PV cache's events, one PV at a time, instead
// of a count of every PV of the cluster each time a mark is written; a PV
// of another provisioner never counts.
func TestMissingGaugeFollowsEvents(t *testing.T) {
	metrics.Register()
	marked := func(name string, missing, managed bool) *v1.PersistentVolume {
		pv := scalePV("n1", len(name))
		pv.Name = name
		if missing {
			pv.Annotations[jobs.AnnVolumeMissing] = "2026-01-01T00:00:00Z"
		}
		if !managed {
			pv.Labels = nil
		}
		return pv
	}
	a, aMissing := marked("a", false, true), marked("a", true, true)
	b := marked("b", true, true)
	foreign := marked("foreign", true, false)
	var g missingGauge
	steps := []struct {
		name     string
		old, obj interface{}
		want     float64
	}{
		{name: "a PV marked missing is listed", obj: b, want: 1},
		{name: "another provisioner's PV", obj: foreign, want: 1},
		{name: "a PV without the mark", obj: a, want: 1},
		{name: "the PV is marked", old: a, obj: aMissing, want: 2},
		{name: "an update that keeps the mark", old: aMissing, obj: aMissing, want: 2},
		{name: "the mark is cleared", old: aMissing, obj: a, want: 1},
		{name: "a marked PV is deleted, its final state unknown", old: cache.DeletedFinalStateUnknown{Key: "b", Obj: b}, want: 0},
	}
	for _, s := range steps {
		g.count(s.old, s.obj)
		if got, err := testutil.GetGaugeMetricValue(metrics.MissingVolumes); err != nil || got != s.want {
			t.Fatalf("after %s: missing volumes %v (%v), want %v", s.name, got, err, s.want)
		}
	}
}
