package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metric names follow docs/metrics.md: nodeplug_<subsystem>_<name>.
const (
	namespace = "nodeplug"
	subsystem = "local_volume_provisioner"
)

// Label values of the kind label.
const (
	KindDiscovery = "discovery"
	KindCleanup   = "cleanup"
)

// ReasonNodeDeleted is the reason label of claims released and PVs deleted
// because their Node was deleted.
const ReasonNodeDeleted = "node_deleted"

// DurationBuckets span 1 s to about 12 h.
var DurationBuckets = []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 43200}

var (
	// DiscoveryDuration is the time from discovery Job creation to its
	// completion, by result.
	DiscoveryDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "discovery_duration_seconds",
		Help:    "Time from the creation of a discovery Job to its completion.",
		Buckets: DurationBuckets, StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	// CleanupDuration is the time from cleanup Job creation to its
	// completion, by volume mode and result.
	CleanupDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "cleanup_duration_seconds",
		Help:    "Time from the creation of a cleanup Job to its completion.",
		Buckets: DurationBuckets, StabilityLevel: metrics.ALPHA,
	}, []string{"volume_mode", "result"})
	// PVsCreated counts PVs created, by storage class.
	PVsCreated = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "persistentvolumes_created_total",
		Help: "PersistentVolumes created.", StabilityLevel: metrics.ALPHA,
	}, []string{"storage_class"})
	// PVsDeleted counts PVs deleted, by reason (cleaned, vanished, node_deleted).
	PVsDeleted = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "persistentvolumes_deleted_total",
		Help: "PersistentVolumes deleted, by reason.", StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	// RejectedReports counts discovery reports rejected whole.
	RejectedReports = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "rejected_reports_total",
		Help: "Discovery reports rejected as a whole, by reason.", StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	// RejectedVolumes counts reported volumes rejected by validation.
	RejectedVolumes = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "rejected_volumes_total",
		Help: "Reported volumes rejected by validation, by reason.", StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	// JobFailures counts failed discovery and cleanup Jobs.
	JobFailures = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "job_failures_total",
		Help: "Discovery and cleanup Jobs that failed.", StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	// JobsCreated counts Jobs created.
	JobsCreated = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "jobs_created_total",
		Help: "Discovery and cleanup Jobs created.", StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	// MissingVolumes is the number of bound PVs whose disk is gone.
	MissingVolumes = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "missing_bound_volumes",
		Help: "Bound PersistentVolumes whose disk was not found by the last discovery.", StabilityLevel: metrics.ALPHA,
	})
	// SkippedDisks counts, per discovery, the disks that match a class's
	// disk selector but get no PV because they are in use or hold data.
	SkippedDisks = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "skipped_disks_total",
		Help: "Disks matching a class's disk selector that were not published, by storage class and reason.", StabilityLevel: metrics.ALPHA,
	}, []string{"storage_class", "reason"})
	// InventoryDisks is the number of whole disks in each node's last
	// inventory.
	InventoryDisks = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "inventory_disks",
		Help: "Whole disks in the last inventory of each node.", StabilityLevel: metrics.ALPHA,
	}, []string{"node"})
	// MachineReplacements counts the times a node name was found to run on
	// another machine than the one its PVs were published for.
	MachineReplacements = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "machine_replacements_total",
		Help: "Nodes found running on a new machine (another machine ID or system UUID) under the name of the machine their PVs belong to.", StabilityLevel: metrics.ALPHA,
	})
	// ReplacedMachineVolumes is the number of PVs kept for a machine that
	// its node name no longer runs on.
	ReplacedMachineVolumes = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "replaced_machine_volumes",
		Help: "PersistentVolumes kept, marked machine-replaced, whose machine no longer runs under their node's name.", StabilityLevel: metrics.ALPHA,
	})
	// BlockedClaims is the number of claims the replaced-machine admission
	// policy refuses new pods of, as last written; 0 while it cannot be
	// written.
	BlockedClaims = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "blocked_claims",
		Help: "Claims of replaced machines' PVs written into the admission policy that refuses their new pods; 0 while the policy cannot be written.", StabilityLevel: metrics.ALPHA,
	})
	// DiskReplacements counts used PVs found with another disk at their
	// path on their own machine.
	DiskReplacements = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "disk_replacements_total",
		Help: "Used PersistentVolumes whose path was found to lead to another disk than the one they were published for.", StabilityLevel: metrics.ALPHA,
	})
	// DisksKeptAcrossMachines counts PVs handed to a node's new machine
	// because their path proved to lead to the same disk.
	DisksKeptAcrossMachines = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "disks_kept_across_machines_total",
		Help: "PersistentVolumes of a replaced machine handed to the new machine because their disk proved to be the same disk.", StabilityLevel: metrics.ALPHA,
	})
	// UnwipedDisks counts the disks of released PVs dropped without a wipe
	// and remembered, so that they are wiped before they are published
	// again.
	UnwipedDisks = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "unwiped_disks_total",
		Help: "Disks of released PersistentVolumes dropped without a wipe and remembered, to be wiped before they are published again.", StabilityLevel: metrics.ALPHA,
	})
	// HeldDisks counts the returned unwiped disks held for an admin.
	HeldDisks = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "held_disks_total",
		Help: "Returned disks of PersistentVolumes dropped without a wipe, held (neither published nor wiped) until an admin wipes or keeps them.", StabilityLevel: metrics.ALPHA,
	})
	// UnwipedMemory is the number of disks the memory of unwiped disks
	// holds (the UnwipedDisks of every installation), and
	// UnwipedMemoryLimit its bound (package unwiped, MaxEntries).
	UnwipedMemory = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "unwiped_disks",
		Help: "Disks remembered as unwiped: each is held for an admin when it returns.", StabilityLevel: metrics.ALPHA,
	})
	UnwipedMemoryLimit = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "unwiped_disks_limit",
		Help: "Most disks the memory of unwiped disks holds; at the bound new disks are not dropped but kept with their PVs.", StabilityLevel: metrics.ALPHA,
	})
	// UnwipedExpired counts the remembered disks forgotten unwiped because
	// their node left the cluster (no Node, no NodeDiskState) longer than
	// the retention ago.
	UnwipedExpired = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "unwiped_disks_expired_total",
		Help: "Remembered unwiped disks forgotten because their node left the cluster longer than the retention ago.", StabilityLevel: metrics.ALPHA,
	})
	// ClassConflicts counts the times a master found a class it is
	// configured for claimed by another installation.
	ClassConflicts = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "class_conflicts_total",
		Help: "Times a StorageClass this master is configured for was found claimed by another installation; it then publishes and wipes nothing of it.", StabilityLevel: metrics.ALPHA,
	}, []string{"storage_class"})
	// CleanupIdentityMismatches counts cleanup Jobs that found another
	// machine or another disk than their PV's and so wiped nothing, by
	// what differed (machine, disk, or unknown when the Job's message was
	// lost).
	CleanupIdentityMismatches = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "cleanup_identity_mismatches_total",
		Help: "Cleanup Jobs that found another machine or disk than their PV's and wiped nothing, by what differed.", StabilityLevel: metrics.ALPHA,
	}, []string{"what"})
	// ClaimsReleased counts the bound claims the master deleted, by reason
	// (node_deleted: their PV's Node was deleted and did not come back).
	ClaimsReleased = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "claims_released_total",
		Help: "Bound PersistentVolumeClaims deleted by the master so that their pods can run elsewhere, by reason.", StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	// WatcherNotifications counts the watcher's notifications, by reason.
	WatcherNotifications = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Subsystem: subsystem, Name: "watcher_notifications_total",
		Help: "Notifications written by the watcher, by reason and result.", StabilityLevel: metrics.ALPHA,
	}, []string{"reason", "result"})
)

var registerOnce sync.Once

// Register registers every metric with the legacy registry. It is safe to
// call more than once.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(DiscoveryDuration, CleanupDuration, PVsCreated, PVsDeleted,
			RejectedReports, RejectedVolumes, JobFailures, JobsCreated, MissingVolumes, WatcherNotifications,
			SkippedDisks, InventoryDisks,
			MachineReplacements, ReplacedMachineVolumes, BlockedClaims,
			DiskReplacements, DisksKeptAcrossMachines, ClassConflicts, UnwipedDisks, HeldDisks,
			UnwipedMemory, UnwipedMemoryLimit, UnwipedExpired,
			CleanupIdentityMismatches, ClaimsReleased)
	})
}
