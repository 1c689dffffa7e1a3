package app

import (
	"github.com/spf13/pflag"
)

// NodeplugOptions are the controller-manager flags that nodeplug adds to
// upstream's. Their zero values leave the binary exactly as upstream's.
type NodeplugOptions struct {
	// FlexVolumeDiscovery replaces upstream's flexvolume prober with
	// nodeplug's on --flex-volume-plugin-dir, shared by the attach/detach
	// and SELinux-warning controllers.
	FlexVolumeDiscovery bool
}

// NewNodeplugOptions returns the defaults: every feature off.
func NewNodeplugOptions() *NodeplugOptions { return &NodeplugOptions{} }

// AddFlags registers nodeplug's flags on fs.
func (o *NodeplugOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.FlexVolumeDiscovery, "experimental-flexvolume-discovery", o.FlexVolumeDiscovery,
		"Use nodeplug's event-driven flexvolume driver discovery on --flex-volume-plugin-dir instead of upstream's prober. "+
			"The attach/detach and SELinux-warning controllers share one watcher.")
}

// Validate checks the options. leaderMigration says whether upstream's
// leader migration is configured, which nodeplug's Run does not support.
func (o *NodeplugOptions) Validate(leaderMigration bool) []error {
	if o.Enabled() && leaderMigration {
		return []error{errLeaderMigration}
	}
	return nil
}

// Enabled reports whether any nodeplug feature is switched on.
func (o *NodeplugOptions) Enabled() bool { return o.FlexVolumeDiscovery }
