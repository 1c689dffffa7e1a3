package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/slots"
)

const (
	metricsNamespace = "nodeplug"
	metricsSubsystem = "plugin_watcher"
	// UnknownType labels plugins whose type has no handler, so that a
	// misbehaving plugin cannot create unbounded label values.
	UnknownType = "unknown"
)

// Failure reasons used as the "reason" label.
const (
	ReasonDial      = "dial"
	ReasonGetInfo   = "get_info"
	ReasonNoHandler = "no_handler"
	// ReasonHandlerPending: the kubelet serves the type but its handler
	// is not there yet (the DRA manager before the container manager
	// started).
	ReasonHandlerPending = "handler_pending"
	ReasonIdentity       = "identity"
	ReasonValidate       = "validate"
	ReasonRegister       = "register"
	ReasonNotify         = "notify"
)

// Metrics are the metrics of one plugin watcher. They are created per
// watcher so that tests can use private registries.
type Metrics struct {
	Registrations   *metrics.CounterVec
	Deregistrations *metrics.CounterVec
	Failures        *metrics.CounterVec
	Throttled       *metrics.Counter
	StaleRemoved    *metrics.Counter
	WatchErrors     *metrics.Counter
	Latency         *metrics.HistogramVec
	Registered      *metrics.GaugeVec
	InFlight        *metrics.GaugeVec
	Deferred        *metrics.CounterVec
}

var legacyOnce sync.Once

var _ slots.Observer = &Metrics{}

// New returns unregistered metrics; see Register.
func New() *Metrics {
	return &Metrics{
		Registrations: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registrations_total",
			Help: "Successful plugin registrations, by plugin type.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		Deregistrations: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "deregistrations_total",
			Help: "Plugin de-registrations, by plugin type.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		Failures: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registration_failures_total",
			Help: "Failed registration attempts, by plugin type and reason.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type", "reason"}),
		Throttled: metrics.NewCounter(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "throttled_total",
			Help: "Registration attempts deferred by the per-plugin token bucket.", StabilityLevel: metrics.ALPHA,
		}),
		StaleRemoved: metrics.NewCounter(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "stale_sockets_removed_total",
			Help: "Socket files removed because nothing listened on them.", StabilityLevel: metrics.ALPHA,
		}),
		WatchErrors: metrics.NewCounter(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "watch_errors_total",
			Help: "Directories that could not be watched or read.", StabilityLevel: metrics.ALPHA,
		}),
		Latency: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registration_duration_seconds",
			Help:           "Time from a socket being observed to its handler registration returning.",
			Buckets:        metrics.ExponentialBuckets(0.0005, 2, 18),
			StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		Registered: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "registered_plugins",
			Help: "Plugins currently registered, by plugin type.", StabilityLevel: metrics.ALPHA,
		}, []string{"plugin_type"}),
		InFlight: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "attempts_in_flight",
			Help:           "Registration attempts in progress, by capacity class (normal, suspect).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"class"}),
		Deferred: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "attempts_deferred_total",
			Help:           "Registration attempts that waited because their class's share of the in-flight limit was full.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"class"}),
	}
}

func (m *Metrics) all() []metrics.Registerable {
	return []metrics.Registerable{m.Registrations, m.Deregistrations, m.Failures, m.Throttled,
		m.StaleRemoved, m.WatchErrors, m.Latency, m.Registered, m.InFlight, m.Deferred}
}

// ObserveInFlight sets the in-flight gauges from the total and the
// suspect attempts in flight.
func (m *Metrics) ObserveInFlight(total, suspect int) {
	m.InFlight.WithLabelValues(slots.Normal.String()).Set(float64(total - suspect))
	m.InFlight.WithLabelValues(slots.Suspect.String()).Set(float64(suspect))
}

// ObserveWait counts an attempt of class c that had to wait for a slot.
func (m *Metrics) ObserveWait(c slots.Class) {
	m.Deferred.WithLabelValues(c.String()).Inc()
}

// Register adds the metrics to reg, or to the legacy registry once per
// process when reg is nil (a second watcher then reports only through its
// own registry, if any).
func (m *Metrics) Register(reg metrics.KubeRegistry) {
	if reg != nil {
		reg.MustRegister(m.all()...)
		return
	}
	legacyOnce.Do(func() { legacyregistry.MustRegister(m.all()...) })
}
