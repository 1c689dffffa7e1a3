// Package executortest holds test doubles of package executor for the
// reconciler's unit tests: FakeExecutor, a file system of socket files and
// the plugins that answer on them, without sockets or connections, and
// FakeMonitor, a Monitor that only remembers what it watches.
package executortest
