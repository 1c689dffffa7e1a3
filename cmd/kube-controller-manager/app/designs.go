package app

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// A design is one nodeplug design compiled into this controller-manager.
// Each lives in files built unless its tag is given (flexdiscovery.go:
// nodeplug_no_flexdiscovery, mountpods.go: nodeplug_no_mountpods); the file
// built with the tag instead returns no design, so a design left out has no
// flag and no code here. nodeplug_no_pluginwatcher changes nothing here:
// the plugin watcher is the kubelet's.
type design struct {
	// name is how --version and hack/build.sh (NODEPLUG_DESIGNS) call the
	// design. The flexvolume driver part that both designs share (flex.go)
	// has none.
	name string
	// addFlags registers the design's --experimental-* flags.
	addFlags func(fs *pflag.FlagSet)
	// validate checks the flags' values; flexPluginDir is upstream's
	// --flex-volume-plugin-dir.
	validate func(flexPluginDir string) []error
	// enabled reports whether the flags switch the design on.
	enabled func() bool
	// hook adds the design's changes to the volume controllers; nil when
	// another part does the work (see flexdiscovery.go).
	hook func(h *VolumeHooks)
}

// NodeplugOptions are the controller-manager flags of the nodeplug designs
// compiled in. Their zero values leave the binary exactly as upstream's.
type NodeplugOptions struct {
	// designs add their hooks in this order: mount pods hand flexvolume
	// discovery the runner of drivers before its hook is built.
	designs []*design
}

// NewNodeplugOptions returns the defaults of the compiled-in designs: every
// feature off.
func NewNodeplugOptions() *NodeplugOptions {
	flex := newFlexDrivers()
	all := []*design{newFlexDiscovery(flex), newMountPods(flex), flex.design()}
	return &NodeplugOptions{designs: slices.DeleteFunc(all, func(d *design) bool { return d == nil })}
}

// Designs returns the names of the designs compiled in.
func (o *NodeplugOptions) Designs() []string {
	var names []string
	for _, d := range o.designs {
		if d.name != "" {
			names = append(names, d.name)
		}
	}
	return names
}

// DesignsLine is the line --version adds: the designs compiled in, or none.
func (o *NodeplugOptions) DesignsLine() string {
	names := o.Designs()
	if len(names) == 0 {
		return "nodeplug designs: none"
	}
	return "nodeplug designs: " + strings.Join(names, ",")
}

// HasFlags reports whether a compiled-in design adds flags, that is
// whether --help has a "nodeplug flags" section.
func (o *NodeplugOptions) HasFlags() bool { return len(o.designs) > 0 }

// AddFlags registers the compiled-in designs' flags on fs.
func (o *NodeplugOptions) AddFlags(fs *pflag.FlagSet) {
	for _, d := range o.designs {
		d.addFlags(fs)
	}
}

// Validate checks the options. leaderMigration says whether upstream's
// leader migration is configured, which nodeplug's Run does not support.
// flexPluginDir is upstream's --flex-volume-plugin-dir, which the mount pod
// driver dir must not overlap.
func (o *NodeplugOptions) Validate(leaderMigration bool, flexPluginDir string) []error {
	var errs []error
	if o.Enabled() && leaderMigration {
		errs = append(errs, errLeaderMigration)
	}
	for _, d := range o.designs {
		errs = append(errs, d.validate(flexPluginDir)...)
	}
	return errs
}

// Enabled reports whether any nodeplug feature is switched on.
func (o *NodeplugOptions) Enabled() bool {
	return slices.ContainsFunc(o.designs, func(d *design) bool { return d.enabled() })
}

// VolumeHooks returns what the designs switched on change in the volume
// controllers.
func (o *NodeplugOptions) VolumeHooks() *VolumeHooks {
	h := &VolumeHooks{}
	for _, d := range o.designs {
		if d.hook != nil && d.enabled() {
			d.hook(h)
		}
	}
	return h
}
