// Package reconciler converges one plugin socket at a time: it compares the
// desired state (the socket file that exists) with the actual state (what
// the handler of its plugin knows) and drives the executor and the handler
// until they agree.
//
// An attempt probes the socket (GetInfo), checks its identity and throttle
// buckets, and runs the owner election of its plugin (type, name): the
// newest live socket is registered, older ones are standbys, and a newer
// socket is validated before the registered one is de-registered. A
// handler's cache.Policy may instead have every live socket registered
// (AllInstances) and registered sockets kept while they refuse
// connections (KeepRegisteredWhenRefused). Failures are reported to the
// plugin and retried with per-socket backoff; an attempt that held its
// in-flight slot for long makes its socket suspect (Class). Sockets that
// found no handler are retried at once when one is added (HandlerAdded).
// Sockets that refuse connections long enough are removed as stale.
// Handler calls for one plugin never overlap (the key gate).
//
// The caller (the watcher's dispatcher) runs Attempt for one path at a time
// in an in-flight slot and requeues the path after the delay it returns.
// Every side effect goes through Dependencies, so the tests drive it with
// the executor's fakes, a fake clock and a fake file system.
package reconciler
