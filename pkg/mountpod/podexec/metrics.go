package podexec

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metric names follow docs/metrics.md: nodeplug_<design>_<name>.
const (
	metricsNamespace = "nodeplug"
	metricsSubsystem = "mountpod"
)

var (
	execTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace,
		Subsystem: metricsSubsystem,
		Name:      "exec_total",
		Help: "Volume utility commands by where they ran (pod, host, or none when neither has the utility), " +
			"utility (base name) and result. Host commands are counted when started, with result started.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"where", "utility", "result"})
	execDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "exec_duration_seconds",
		Help:           "Duration of volume utility commands run in mount pods.",
		Buckets:        []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		StabilityLevel: metrics.ALPHA,
	}, []string{"where"})
)

var registerOnce sync.Once

// registerMetrics registers the metrics with the legacy registry, once per
// process, when the first Router is made: a binary that links this package
// without routing through mount pods exports none of them.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(execTotal, execDuration)
	})
}

func observe(where, utility string, err error, took time.Duration) {
	result := "success"
	switch {
	case where == "host":
		result = "started"
	case err != nil:
		result = "failure"
	}
	execTotal.WithLabelValues(where, utility, result).Inc()
	if where == "pod" {
		execDuration.WithLabelValues(where).Observe(took.Seconds())
	}
}
