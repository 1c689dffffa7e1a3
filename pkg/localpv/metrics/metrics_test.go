package metrics

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestRegisterAndExpose(t *testing.T) {
	Register()
	Register()
	PVsCreated.WithLabelValues("fast").Inc()
	CleanupDuration.WithLabelValues("Block", "succeeded").Observe(3 * 3600)
	want := `
# HELP local_volume_provisioner_persistentvolumes_created_total [ALPHA] PersistentVolumes created.
# TYPE local_volume_provisioner_persistentvolumes_created_total counter
local_volume_provisioner_persistentvolumes_created_total{storage_class="fast"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"local_volume_provisioner_persistentvolumes_created_total"); err != nil {
		t.Fatal(err)
	}
	if DurationBuckets[len(DurationBuckets)-1] < 4*3600 {
		t.Fatal("duration buckets must reach hours")
	}
}
