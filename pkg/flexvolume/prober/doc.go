// Package prober discovers flexvolume drivers in a plugin directory while the
// process runs, as the "Dynamic Flexvolume plugin discovery" design asks.
//
// It is split the way the kubelet's plugin manager is:
//
//	populator  (fsnotify watch + rate-limited scans) -> desired state of the world
//	reconciler (desired vs actual, in-use checks)    -> operations
//	executor   (driver "init" calls, one per driver)  -> actual state of the world
//	publisher  (immutable Snapshot behind an atomic pointer)
//
// Consumers read the published Snapshot; reading it when nothing changed is
// one atomic load. pkg/volume/flexvolume adapts Snapshots to upstream's
// volume.DynamicPluginProber, one view per consumer, so that several
// controllers share one watcher. README.md states the behaviour contract.
package prober
