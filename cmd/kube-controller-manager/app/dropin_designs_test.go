//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

// noDesignsBuild: at least one design may be compiled in.
const noDesignsBuild = false
