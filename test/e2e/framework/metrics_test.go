package framework

import (
	"maps"
	"testing"
)

const metricsText = `# HELP nodeplug_plugin_watcher_registrations_total Registrations.
# TYPE nodeplug_plugin_watcher_registrations_total counter
nodeplug_plugin_watcher_registrations_total{plugin_type="CSIPlugin",result="success"} 2
nodeplug_plugin_watcher_registrations_total{plugin_type="DRAPlugin",result="success"} 1
nodeplug_plugin_watcher_registrations_total{plugin_type="DRAPlugin",result="error"} 3
nodeplug_plugin_watcher_registrations_total_other{plugin_type="CSIPlugin"} 100
nodeplug_mountpod_misconfigured_pods 1
nodeplug_mountpod_misconfigured_pods_x 7
broken{plugin_type="CSIPlugin"} not-a-number
`

func TestMetricSum(t *testing.T) {
	tests := map[string]struct {
		metric string
		labels []string
		want   float64
	}{
		"every sample of the metric, no longer name": {metric: "nodeplug_plugin_watcher_registrations_total", want: 6},
		"one label":                   {metric: "nodeplug_plugin_watcher_registrations_total", labels: []string{`plugin_type="DRAPlugin"`}, want: 4},
		"two labels":                  {metric: "nodeplug_plugin_watcher_registrations_total", labels: []string{`plugin_type="DRAPlugin"`, `result="success"`}, want: 1},
		"a label no sample has":       {metric: "nodeplug_plugin_watcher_registrations_total", labels: []string{`plugin_type="DevicePlugin"`}, want: 0},
		"a metric without labels":     {metric: "nodeplug_mountpod_misconfigured_pods", want: 1},
		"a metric not there":          {metric: "kubelet_running_pods", want: 0},
		"a value that does not parse": {metric: "broken", want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MetricSum(metricsText, tc.metric, tc.labels...); got != tc.want {
				t.Errorf("MetricSum = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMetricSumBy(t *testing.T) {
	tests := map[string]struct {
		metric, label string
		want          map[string]float64
	}{
		"by plugin type":            {metric: "nodeplug_plugin_watcher_registrations_total", label: "plugin_type", want: map[string]float64{"CSIPlugin": 2, "DRAPlugin": 4}},
		"samples without the label": {metric: "nodeplug_mountpod_misconfigured_pods", label: "plugin_type", want: map[string]float64{"": 1}},
		"a metric not there":        {metric: "kubelet_running_pods", label: "plugin_type", want: map[string]float64{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MetricSumBy(metricsText, tc.metric, tc.label); !maps.Equal(got, tc.want) {
				t.Errorf("MetricSumBy = %v, want %v", got, tc.want)
			}
		})
	}
}
