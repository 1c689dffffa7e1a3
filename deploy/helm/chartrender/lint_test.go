package chartrender

import (
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// TestHelmLint runs helm lint's checks (Chart.yaml, values, templates,
// rendered YAML) on the chart, with its defaults and with upstream-style
// values.
func TestHelmLint(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
	}{
		{name: "defaults"},
		{name: "upstream values", values: readValues(t, "testdata/upstream-values.yaml")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			linter := lint.All(DefaultChartDir("."), tc.values, testNS, false)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %v", m)
				} else {
					t.Logf("helm lint: %v", m)
				}
			}
		})
	}
}
