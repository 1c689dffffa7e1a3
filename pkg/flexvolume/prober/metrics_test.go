package prober

import (
	"testing"

	"github.com/nodeplug/nodeplug/pkg/util/metricstest"
)

func TestMetricsConvention(t *testing.T) {
	metricstest.Check(t, metricsSubsystem, []string{
		"scans_total", "driver_inits_total", "driver_init_failures_total", "events_total",
		"watch_overflows_total", "drivers", "plugin_dir_unavailable",
	}, func() {
		initsTotal.WithLabelValues("success").Add(0)
		initFailuresTotal.WithLabelValues("example.com/nfs").Add(0)
		eventsTotal.WithLabelValues(ReasonDriverInitFailed).Add(0)
		driversGauge.WithLabelValues(stateLabel(StateInitFailed)).Add(0)
	}, scansTotal, initsTotal, initFailuresTotal, eventsTotal, overflowsTotal, driversGauge, dirUnavailable)
	if got := stateLabel(StateInitFailed); got != "init_failed" {
		t.Errorf("state label %q, want init_failed", got)
	}
}
