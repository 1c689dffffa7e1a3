package mounter

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	unpropagated = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "nodeplug",
		Subsystem: "mountpod",
		Name:      "unpropagated_mounts_total",
		Help: "Mounts made in a mount pod that did not reach the host (the pod lacks a Bidirectional mount of the " +
			"kubelet root dir); each was undone and its volume operation failed.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"plugin"})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(unpropagated) })
}
