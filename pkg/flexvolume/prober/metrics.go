package prober

import (
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metric names follow docs/metrics.md: nodeplug_<design>_<name>.
const (
	metricsNamespace = "nodeplug"
	metricsSubsystem = "flexvolume"
)

var (
	scansTotal = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "scans_total",
		Help:           "Number of scans of the flexvolume plugin directory.",
		StabilityLevel: metrics.ALPHA,
	})
	initsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "driver_inits_total",
		Help:           "Number of flexvolume driver init calls, by result (success or failure).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	initFailuresTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "driver_init_failures_total",
		Help:           "Number of flexvolume driver versions whose init failed, counted once per version.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver"})
	eventsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "events_total",
		Help:           "Number of flexvolume discovery events reported, by reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	overflowsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "watch_overflows_total",
		Help:           "Number of inotify queue overflows on the flexvolume plugin directory; each causes a full rescan.",
		StabilityLevel: metrics.ALPHA,
	})
	driversGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "drivers",
		Help:           "Number of loaded flexvolume drivers, by state (ready, init_failed, removing).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"state"})
	dirUnavailable = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "plugin_dir_unavailable",
		Help:           "1 while the flexvolume plugin directory cannot be created or watched.",
		StabilityLevel: metrics.ALPHA,
	})
)

// stateLabel is the drivers gauge's state label: State.String in
// snake_case, like every label value nodeplug defines.
func stateLabel(s State) string {
	return strings.ReplaceAll(s.String(), "-", "_")
}

var registerOnce sync.Once

// registerMetrics registers the metrics with the legacy registry, once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(scansTotal, initsTotal, initFailuresTotal, eventsTotal,
			overflowsTotal, driversGauge, dirUnavailable)
	})
}

// Stats are a Prober's own counters, independent of the shared metrics.
type Stats struct {
	// Scans counts plugin directory scans.
	Scans uint64
	// Inits counts driver init calls; InitFailures those that failed.
	Inits, InitFailures uint64
	// Overflows counts watch queue overflows.
	Overflows uint64
}

type stats struct {
	scans, inits, initFailures, overflows atomic.Uint64
}

func (s *stats) get() Stats {
	return Stats{
		Scans: s.scans.Load(), Inits: s.inits.Load(),
		InitFailures: s.initFailures.Load(), Overflows: s.overflows.Load(),
	}
}
