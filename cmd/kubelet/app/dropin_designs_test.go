//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_pluginwatcher || !nodeplug_no_mountpods || !nodeplug_no_localpvcheck

package app

// noDesignsBuild: at least one design may be compiled in.
const noDesignsBuild = false
