//go:build !nodeplug_no_flexdiscovery

package app

import "github.com/nodeplug/nodeplug/pkg/designs"

// newFlexDiscovery returns the flexdiscovery design: one flag that
// switches nodeplug's flexvolume probers (flex.go) on instead of
// upstream's.
func newFlexDiscovery(flex *flexDrivers) *design {
	return designs.Switch[startFunc]("flexdiscovery", "experimental-flexvolume-discovery",
		"Use nodeplug's event-driven flexvolume driver discovery on --flex-volume-plugin-dir instead of upstream's prober. "+
			"The attach/detach and SELinux-warning controllers share one watcher.", &flex.users)
}
