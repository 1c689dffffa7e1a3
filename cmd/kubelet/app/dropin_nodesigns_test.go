//go:build nodeplug_no_flexdiscovery && nodeplug_no_pluginwatcher && nodeplug_no_mountpods && nodeplug_no_localpvcheck

package app

// noDesignsBuild: built with every nodeplug_no_* tag, so TestDropInFlagSet
// wants exactly upstream's flags.
const noDesignsBuild = true
