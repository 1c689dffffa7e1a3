// Package prober discovers flexvolume drivers in a plugin directory while the
// process runs, as the "Dynamic Flexvolume plugin discovery" design asks.
//
// It is split the way the kubelet's plugin manager is:
//
//	populator  (dirwatch events + rate-limited scans) -> desired state of the world
//	reconciler (desired vs actual, in-use checks)    -> operations
//	executor   (driver "init" calls, one per driver)  -> actual state of the world
//	publisher  (immutable Snapshot behind an atomic pointer)
//
// The reconciler runs in the goroutine that brings a change, under its lock:
// the populator's after a scan, an init's after it finished, its own on a
// timer. A new driver thus costs one goroutine hand-off, into its init.
//
// Consumers read the published Snapshot; reading it when nothing changed is
// one atomic load. While inits run, Settling lets them wait, briefly, for
// their result. pkg/flexvolume/flexadapter adapts Snapshots to upstream's
// volume.DynamicPluginProber, one view per consumer, so that several
// controllers share one watcher. README.md states the behaviour contract.
package prober
