// Package flexdrivers publishes the flexvolume drivers that mount pods
// serve as placeholder executables in a directory of the kubelet's, so that
// nodeplug's flexvolume prober (pkg/flexvolume/prober) loads them like
// drivers installed on the host: init on arrival, re-init when the serving
// pod changes, and removal (deferred while volumes use the driver) when no
// pod serves it any more.
//
// watch (mount pod informer events) -> desired (drivers served, from
// mountpod.Finder.Served) / actual (the directory) -> reconcile (Sync) ->
// execute (atomic write or removal of <dir>/<vendor>~<driver>/<driver>).
//
// A placeholder never runs as a driver: the kubelet's flexvolume runner
// (pkg/mountpod/podexec Router.ForFlexDrivers) runs the driver in the pod
// at mountpod.FlexDriverDir instead. Run directly, it prints a Failure.
package flexdrivers
