//go:build nodeplug_no_pluginwatcher

package app

// newPluginWatcher returns no design: nodeplug_no_pluginwatcher leaves the
// plugin watcher and its flags out.
func newPluginWatcher() *design { return nil }
