// Package metrics defines the Prometheus metrics of the local volume
// provisioner's master and watcher. Their names follow nodeplug's convention
// (docs/metrics.md) and start with nodeplug_local_volume_provisioner_.
// Durations use buckets from one second to twelve hours, because a shred of
// a large HDD takes hours. Register adds them to the legacy registry; a
// binary calls it when it runs the master or the watcher.
package metrics
