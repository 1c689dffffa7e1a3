// Package report emits the plugin watcher's operator-facing logs (with
// contextual klog) and Node events, rate-limited so that a flood of
// sockets cannot flood the log: one line per message and plugin per
// interval, a total budget per interval, and one summary line counting
// what was held back. Successful registrations are logged at V(2) outside
// that budget; per-event detail goes to V(4).
package report
