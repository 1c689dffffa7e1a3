package metrics

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/nodeplug/nodeplug/pkg/util/metricstest"
)

func TestRegisterAndExpose(t *testing.T) {
	Register()
	Register()
	PVsCreated.WithLabelValues("fast").Inc()
	CleanupDuration.WithLabelValues("Block", "succeeded").Observe(3 * 3600)
	want := `
# HELP nodeplug_local_volume_provisioner_persistentvolumes_created_total [ALPHA] PersistentVolumes created.
# TYPE nodeplug_local_volume_provisioner_persistentvolumes_created_total counter
nodeplug_local_volume_provisioner_persistentvolumes_created_total{storage_class="fast"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"nodeplug_local_volume_provisioner_persistentvolumes_created_total"); err != nil {
		t.Fatal(err)
	}
	if DurationBuckets[len(DurationBuckets)-1] < 4*3600 {
		t.Fatal("duration buckets must reach hours")
	}
}

func TestMetricsConvention(t *testing.T) {
	metricstest.Check(t, subsystem, []string{
		"discovery_duration_seconds", "cleanup_duration_seconds", "persistentvolumes_created_total",
		"persistentvolumes_deleted_total", "rejected_reports_total", "rejected_volumes_total", "job_failures_total",
		"jobs_created_total", "missing_bound_volumes", "watcher_notifications_total", "skipped_disks_total",
		"inventory_disks",
		"machine_replacements_total", "replaced_machine_volumes", "blocked_claims",
		"cleanup_identity_mismatches_total", "claims_released_total", "disk_replacements_total",
		"disks_kept_across_machines_total", "class_conflicts_total", "unwiped_disks_total",
	}, func() {
		DiscoveryDuration.WithLabelValues("succeeded").Observe(0)
		CleanupDuration.WithLabelValues("Filesystem", "succeeded").Observe(0)
		PVsCreated.WithLabelValues("fast").Add(0)
		PVsDeleted.WithLabelValues("cleaned").Add(0)
		RejectedReports.WithLabelValues("WrongNode").Add(0)
		RejectedVolumes.WithLabelValues("NotAMountPoint").Add(0)
		JobFailures.WithLabelValues(KindCleanup).Add(0)
		JobsCreated.WithLabelValues(KindDiscovery).Add(0)
		WatcherNotifications.WithLabelValues("Resync", "success").Add(0)
		SkippedDisks.WithLabelValues("fast", "HasSignature").Add(0)
		InventoryDisks.WithLabelValues("node-1").Set(0)
		CleanupIdentityMismatches.WithLabelValues("disk").Add(0)
		ClaimsReleased.WithLabelValues(ReasonNodeDeleted).Add(0)
		ClassConflicts.WithLabelValues("fast").Add(0)
	}, DiscoveryDuration, CleanupDuration, PVsCreated, PVsDeleted, RejectedReports, RejectedVolumes,
		JobFailures, JobsCreated, MissingVolumes, WatcherNotifications, SkippedDisks, InventoryDisks,
		MachineReplacements, ReplacedMachineVolumes, BlockedClaims,
		CleanupIdentityMismatches, ClaimsReleased, DiskReplacements, DisksKeptAcrossMachines, ClassConflicts, UnwipedDisks,
		UnwipedMemory, UnwipedMemoryLimit, UnwipedExpired)
}
