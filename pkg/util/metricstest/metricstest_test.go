package metricstest

import (
	"fmt"
	"testing"

	"k8s.io/component-base/metrics"
)

// recorder collects the errors Check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	good := metrics.NewCounterVec(&metrics.CounterOpts{Namespace: Namespace, Subsystem: "demo", Name: "calls_total",
		Help: "Calls.", StabilityLevel: metrics.ALPHA}, []string{"plugin_type"})
	latency := metrics.NewHistogram(&metrics.HistogramOpts{Namespace: Namespace, Subsystem: "demo", Name: "call_duration_seconds",
		Help: "Call latency.", StabilityLevel: metrics.ALPHA})
	r := &recorder{TB: t}
	Check(r, "demo", []string{"calls_total", "call_duration_seconds"}, func() { good.WithLabelValues("x").Inc() }, good, latency)
	if len(r.errs) != 0 {
		t.Fatalf("conforming metrics reported: %q", r.errs)
	}

	camel := metrics.NewGaugeVec(&metrics.GaugeOpts{Namespace: Namespace, Subsystem: "demo", Name: "things",
		Help: "Things.", StabilityLevel: metrics.ALPHA}, []string{"pluginType"})
	tests := []struct {
		name   string
		metric metrics.Registerable
		touch  func()
	}{
		{name: "no namespace", metric: metrics.NewGauge(&metrics.GaugeOpts{Subsystem: "demo", Name: "things",
			Help: "Things.", StabilityLevel: metrics.ALPHA})},
		{name: "counter without _total", metric: metrics.NewCounter(&metrics.CounterOpts{Namespace: Namespace,
			Subsystem: "demo", Name: "calls", Help: "Calls.", StabilityLevel: metrics.ALPHA})},
		{name: "duration in milliseconds", metric: metrics.NewHistogram(&metrics.HistogramOpts{Namespace: Namespace,
			Subsystem: "demo", Name: "call_duration_ms", Help: "Latency.", StabilityLevel: metrics.ALPHA})},
		{name: "camelCase label", metric: camel, touch: func() { camel.WithLabelValues("x").Set(1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, "demo", nil, tc.touch, tc.metric)
			if len(r.errs) == 0 {
				t.Fatal("not reported")
			}
		})
	}

	r = &recorder{TB: t}
	Check(r, "demo", []string{"missing_total"}, nil)
	if len(r.errs) != 1 {
		t.Fatalf("a missing metric gave %q", r.errs)
	}
}
