package app

import (
	"github.com/nodeplug/nodeplug/pkg/designs"
)

// design is one nodeplug design compiled into this controller-manager
// (pkg/designs). Each lives in files built unless its tag is given
// (flexdiscovery.go: nodeplug_no_flexdiscovery, mountpods.go:
// nodeplug_no_mountpods); the file built with the tag instead returns no
// design. nodeplug_no_pluginwatcher changes nothing here: the plugin
// watcher is the kubelet's. Validate gets upstream's
// --flex-volume-plugin-dir.
type design = designs.Design[startFunc]

// startFunc is a design's start hook (designs.Design.Start; the kubelet's
// has the same name): it adds the design's changes to the volume
// controllers.
type startFunc func(h *VolumeHooks)

// NodeplugOptions are the controller-manager flags of the nodeplug designs
// compiled in. Their zero values leave the binary exactly as upstream's.
type NodeplugOptions struct {
	// The designs' hooks run in this order: mount pods hand flexvolume
	// discovery the runner of drivers before its hook is built.
	*designs.List[startFunc]
}

// NewNodeplugOptions returns the defaults of the compiled-in designs: every
// feature off.
func NewNodeplugOptions() *NodeplugOptions {
	flex := newFlexDrivers()
	return &NodeplugOptions{designs.NewList(newFlexDiscovery(flex), newMountPods(flex), flex.design())}
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
	return append(errs, o.List.Validate(flexPluginDir)...)
}

// VolumeHooks returns what the designs switched on change in the volume
// controllers.
func (o *NodeplugOptions) VolumeHooks() *VolumeHooks {
	h := &VolumeHooks{}
	for _, hook := range o.Starts() {
		if hook != nil {
			hook(h)
		}
	}
	return h
}
