// Package metrics defines the plugin watcher's metrics (namespace
// "nodeplug", subsystem "plugin_watcher"; docs/metrics.md lists them) and
// the label values the other parts use: the failure reasons and the type
// "unknown" for plugins without a handler, which keeps label cardinality
// bounded whatever plugins report.
package metrics
