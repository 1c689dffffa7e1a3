package pluginwatcher

import (
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
)

// Handler and upstream's PluginHandler have the same method set: every
// upstream handler is a Handler and every Handler is an upstream handler.
var (
	_ Handler             = cache.PluginHandler(nil)
	_ cache.PluginHandler = Handler(nil)
)
