package pluginwatcher

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const (
	metricsNamespace = "nodeplug"
	metricsSubsystem = "plugin_watcher"
	// unknownType labels plugins whose type has no handler, so that a
	// misbehaving plugin cannot create unbounded label values.
	unknownType = "unknown"
)

// Failure reasons used as the "reason" label.
const (
	reasonDial      = "dial"
	reasonGetInfo   = "get_info"
	reasonNoHandler = "no_handler"
	reasonIdentity  = "identity"
	reasonValidate  = "validate"
	reasonRegister  = "register"
	reasonNotify    = "notify"
)

// watcherMetrics are the metrics of one Watcher. They are created per
// watcher so that tests can use private registries.
type watcherMetrics struct {
	registrations   *metrics.CounterVec
	deregistrations *metrics.CounterVec
	failures        *metrics.CounterVec
	throttled       *metrics.Counter
	staleRemoved    *metrics.Counter
	watchErrors     *metrics.Counter
	latency         *metrics.HistogramVec
	registered      *metrics.GaugeVec
	inFlight        *metrics.GaugeVec
	deferred        *metrics.CounterVec
}

var legacyOnce sync.Once

func newWatcherMetrics() *watcherMetrics {
	return &watcherMetrics{
		registrations: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registrations_total",
			Help: "Successful plugin registrations, by plugin type.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		deregistrations: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "deregistrations_total",
			Help: "Plugin de-registrations, by plugin type.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		failures: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registration_failures_total",
			Help: "Failed registration attempts, by plugin type and reason.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type", "reason"}),
		throttled: metrics.NewCounter(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "throttled_total",
			Help: "Registration attempts deferred by the per-plugin token bucket.", StabilityLevel: metrics.ALPHA,
		}),
		staleRemoved: metrics.NewCounter(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "stale_sockets_removed_total",
			Help: "Socket files removed because nothing listened on them.", StabilityLevel: metrics.ALPHA,
		}),
		watchErrors: metrics.NewCounter(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "watch_errors_total",
			Help: "Directories that could not be watched or read.", StabilityLevel: metrics.ALPHA,
		}),
		latency: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registration_duration_seconds",
			Help:           "Time from a socket being observed to its handler registration returning.",
			Buckets:        metrics.ExponentialBuckets(0.0005, 2, 18),
			StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		registered: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registered_plugins",
			Help: "Plugins currently registered, by plugin type.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		inFlight: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "attempts_in_flight",
			Help:           "Registration attempts in progress, by capacity class (normal, suspect).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"class"}),
		deferred: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "attempts_deferred_total",
			Help:           "Registration attempts that waited because their class's share of the in-flight limit was full.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"class"}),
	}
}

func (m *watcherMetrics) all() []metrics.Registerable {
	return []metrics.Registerable{m.registrations, m.deregistrations, m.failures, m.throttled,
		m.staleRemoved, m.watchErrors, m.latency, m.registered, m.inFlight, m.deferred}
}

// observeInFlight sets the in-flight gauges from the total and the
// suspect attempts in flight.
func (m *watcherMetrics) observeInFlight(total, suspect int) {
	m.inFlight.WithLabelValues(classNormal.String()).Set(float64(total - suspect))
	m.inFlight.WithLabelValues(classSuspect.String()).Set(float64(suspect))
}

// observeWait counts an attempt of class c that had to wait for a slot.
func (m *watcherMetrics) observeWait(c attemptClass) {
	m.deferred.WithLabelValues(c.String()).Inc()
}

// register adds the metrics to reg, or to the legacy registry once per
// process when reg is nil (a second watcher then reports only through its
// own registry, if any).
func (m *watcherMetrics) register(reg metrics.KubeRegistry) {
	if reg != nil {
		reg.MustRegister(m.all()...)
		return
	}
	legacyOnce.Do(func() { legacyregistry.MustRegister(m.all()...) })
}
