package metricstest

import (
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"
)

// Namespace is the first part of every nodeplug metric name.
const Namespace = "nodeplug"

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// Check registers cs in a private registry and checks every metric family
// they export against the convention for subsystem. A vector exports
// nothing until it has a child, and a metric ignores writes until it is
// registered somewhere, so touch (if not nil) runs after the registration
// and should give each vector a child (WithLabelValues(...).Add(0)). want
// lists the expected names without the nodeplug_<subsystem>_ prefix; every
// one must be exported.
func Check(t testing.TB, subsystem string, want []string, touch func(), cs ...metrics.Registerable) {
	t.Helper()
	reg := metrics.NewKubeRegistry()
	reg.MustRegister(cs...)
	if touch != nil {
		touch()
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	prefix := Namespace + "_" + subsystem + "_"
	seen := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		short, ok := strings.CutPrefix(name, prefix)
		if !ok || !snakeCase.MatchString(short) {
			t.Errorf("metric %s: want %s<snake_case name>", name, prefix)
		}
		seen[short] = true
		checkFamily(t, f)
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("metric %s%s is not exported (touch each vector before Check)", prefix, w)
		}
	}
}

func checkFamily(t testing.TB, f *dto.MetricFamily) {
	t.Helper()
	name := f.GetName()
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		if !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s: want a _total suffix", name)
		}
	case dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY:
		if strings.Contains(name, "duration") && !strings.HasSuffix(name, "_seconds") {
			t.Errorf("%s %s: a duration is measured in seconds, want a _seconds suffix", f.GetType(), name)
		}
	case dto.MetricType_GAUGE:
		if strings.HasSuffix(name, "_total") {
			t.Errorf("gauge %s: _total is for counters", name)
		}
	}
	if !strings.Contains(f.GetHelp(), "[ALPHA]") && !strings.Contains(f.GetHelp(), "[BETA]") &&
		!strings.Contains(f.GetHelp(), "[STABLE]") {
		t.Errorf("metric %s: no stability level (StabilityLevel: metrics.ALPHA)", name)
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if !snakeCase.MatchString(l.GetName()) {
				t.Errorf("metric %s: label %q is not snake_case", name, l.GetName())
			}
		}
	}
}
