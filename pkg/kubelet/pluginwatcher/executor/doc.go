// Package executor performs the plugin watcher's side effects on plugins:
// it dials a registration socket and calls GetInfo (Probe), reports the
// outcome with NotifyRegistrationStatus (Notify), deletes a socket file
// nobody listens on (RemoveStale), and keeps the connection of each
// registered plugin open to notice when it dies (Monitor).
//
// Every call is bounded by a timeout. Errors wrap ErrRefused when nothing
// listens on the socket and ErrGone when the file is no longer a socket, so
// that the reconciler can tell a stale socket from a slow one.
//
// Package executortest has FakeExecutor and FakeMonitor, which stand in
// for both without sockets, for the reconciler's tests.
package executor
