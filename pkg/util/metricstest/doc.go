// Package metricstest checks, in a package's tests, that its metrics follow
// nodeplug's metrics convention (docs/metrics.md): names
// nodeplug_<subsystem>_<name>, counters ending in _total, histograms and
// summaries of time in _seconds, snake_case label names, and a stability
// level in the help text.
package metricstest
