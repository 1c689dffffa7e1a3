package volumecheck

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// metricsSubsystem is this design's subsystem (docs/metrics.md).
const metricsSubsystem = "local_volume_check"

var (
	refusals = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "nodeplug",
		Subsystem: metricsSubsystem,
		Name:      "refusals_total",
		Help: "Mounts and block maps of local PersistentVolumes the kubelet refused because the PV's path did not " +
			"lead to its disk, by reason (mismatch, unreadable, device_not_mounted).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	registerOnce sync.Once
)

// RegisterMetrics registers the refusals counter with the legacy registry,
// once per process.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(refusals) })
}
