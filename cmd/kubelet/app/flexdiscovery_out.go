//go:build nodeplug_no_flexdiscovery

package app

// newFlexDiscovery returns no design: nodeplug_no_flexdiscovery leaves
// --experimental-flexvolume-discovery out. The prober itself is still
// compiled in when mount pods are, which run flex drivers through it.
func newFlexDiscovery(*flexDrivers) *design { return nil }
