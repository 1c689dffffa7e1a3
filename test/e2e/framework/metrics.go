package framework

import (
	"strconv"
	"strings"
)

// MetricSum is the sum of the samples of metric in text (Prometheus' text
// format, as a kubelet's /metrics serves it) whose label set contains
// every one of labels, each written `key="value"`. Samples whose value
// does not parse are left out.
func MetricSum(text, metric string, labels ...string) float64 {
	var sum float64
	for _, s := range metricSamples(text, metric) {
		if containsAll(s.labels, labels) {
			sum += s.value
		}
	}
	return sum
}

// MetricSumBy is MetricSum grouped by the value of label: one sum per
// value, samples without label under "".
func MetricSumBy(text, metric, label string) map[string]float64 {
	sums := map[string]float64{}
	for _, s := range metricSamples(text, metric) {
		_, value, _ := strings.Cut(s.labels, label+`="`)
		value, _, _ = strings.Cut(value, `"`)
		sums[value] += s.value
	}
	return sums
}

type metricSample struct {
	labels string // the text between the braces
	value  float64
}

// metricSamples returns metric's samples in text.
func metricSamples(text, metric string) []metricSample {
	var samples []metricSample
	for _, line := range strings.Split(text, "\n") {
		var rest string
		switch {
		case strings.HasPrefix(line, metric+"{"):
			rest = line[len(metric):]
		case strings.HasPrefix(line, metric+" "):
			rest = line[len(metric):]
		default:
			continue
		}
		value, err := strconv.ParseFloat(rest[strings.LastIndex(rest, " ")+1:], 64)
		if err != nil {
			continue
		}
		labels := ""
		if strings.HasPrefix(rest, "{") {
			labels, _, _ = strings.Cut(rest[1:], "}")
		}
		samples = append(samples, metricSample{labels: labels, value: value})
	}
	return samples
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
