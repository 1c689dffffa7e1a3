//go:build !nodeplug_no_flexdiscovery

package app

import "github.com/spf13/pflag"

// flexDiscoveryOptions is the flexdiscovery design's flag: nodeplug's
// flexvolume prober (flex.go) instead of upstream's, with nothing else.
type flexDiscoveryOptions struct {
	// enabled replaces upstream's flexvolume prober with nodeplug's
	// (pkg/flexvolume/prober) on --volume-plugin-dir.
	enabled bool
}

// AddFlags registers --experimental-flexvolume-discovery on fs.
func (o *flexDiscoveryOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.enabled, "experimental-flexvolume-discovery", o.enabled,
		"Use nodeplug's event-driven flexvolume driver discovery on --volume-plugin-dir instead of upstream's prober.")
}

// Validate has nothing to check: the flag is a switch.
func (o *flexDiscoveryOptions) Validate(string) []error { return nil }

// newFlexDiscovery returns the flexdiscovery design. Its work is the
// prober's, which starts when the design is on.
func newFlexDiscovery(flex *flexDrivers) *design {
	o := &flexDiscoveryOptions{}
	on := func() bool { return o.enabled }
	flex.usedBy(on)
	return &design{name: "flexdiscovery", addFlags: o.AddFlags, validate: o.Validate, enabled: on}
}
