//go:build !nodeplug_no_flexdiscovery

package app

import "github.com/spf13/pflag"

// flexDiscoveryOptions is the flexdiscovery design's flag: nodeplug's
// flexvolume prober (flex.go) instead of upstream's, with nothing else.
type flexDiscoveryOptions struct {
	// enabled replaces upstream's flexvolume prober with nodeplug's on
	// --flex-volume-plugin-dir, shared by the attach/detach and
	// SELinux-warning controllers.
	enabled bool
}

// AddFlags registers --experimental-flexvolume-discovery on fs.
func (o *flexDiscoveryOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.enabled, "experimental-flexvolume-discovery", o.enabled,
		"Use nodeplug's event-driven flexvolume driver discovery on --flex-volume-plugin-dir instead of upstream's prober. "+
			"The attach/detach and SELinux-warning controllers share one watcher.")
}

// Validate has nothing to check: the flag is a switch.
func (o *flexDiscoveryOptions) Validate(string) []error { return nil }

// newFlexDiscovery returns the flexdiscovery design. Its work is the
// prober's, whose hook is added when the design is on.
func newFlexDiscovery(flex *flexDrivers) *design {
	o := &flexDiscoveryOptions{}
	on := func() bool { return o.enabled }
	flex.usedBy(on)
	return &design{name: "flexdiscovery", addFlags: o.AddFlags, validate: o.Validate, enabled: on}
}
