package podexec

import (
	"testing"

	"github.com/nodeplug/nodeplug/pkg/util/metricstest"
)

func TestMetricsConvention(t *testing.T) {
	metricstest.Check(t, metricsSubsystem, []string{"exec_total", "exec_duration_seconds"}, func() {
		execTotal.WithLabelValues("pod", "mkfs.ext4", "success").Add(0)
		execDuration.WithLabelValues("pod").Observe(0)
	}, execTotal, execDuration)
}
