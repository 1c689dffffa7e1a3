package app

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
)

// A design is one nodeplug design compiled into this kubelet. Each lives in
// files built unless its tag is given (flexdiscovery.go:
// nodeplug_no_flexdiscovery, pluginwatcher.go: nodeplug_no_pluginwatcher,
// mountpods.go: nodeplug_no_mountpods); the file built with the tag instead
// returns no design, so a design left out has no flag and no code here.
type design struct {
	// name is how --version and hack/build.sh (NODEPLUG_DESIGNS) call the
	// design. The flexvolume driver part that two designs share (flex.go)
	// has none.
	name string
	// addFlags registers the design's --experimental-* flags.
	addFlags func(fs *pflag.FlagSet)
	// validate checks the flags' values against the kubelet's --root-dir.
	validate func(rootDir string) []error
	// enabled reports whether the flags switch the design on.
	enabled func() bool
	// customize changes the kubelet's dependencies for the design; nil
	// when another part does the work (see flexdiscovery.go).
	customize func(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, node *v1.ObjectReference) error
}

// NodeplugOptions are the kubelet flags of the nodeplug designs compiled
// in. Every one is named --experimental-*, and their zero values leave the
// kubelet exactly as upstream builds it.
type NodeplugOptions struct {
	// designs run their customize hooks in this order: mount pods hand
	// flexvolume discovery the runner of drivers before it starts, and the
	// kubelet Options they append run in the same order.
	designs []*design
}

// NewNodeplugOptions returns the defaults of the compiled-in designs: every
// feature off.
func NewNodeplugOptions() *NodeplugOptions {
	flex := newFlexDrivers()
	all := []*design{newFlexDiscovery(flex), newMountPods(flex), flex.design(), newPluginWatcher()}
	return &NodeplugOptions{designs: slices.DeleteFunc(all, func(d *design) bool { return d == nil })}
}

// Designs returns the names of the designs compiled in, in the order of
// NODEPLUG_DESIGNS' documentation.
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

// AddFlags registers the compiled-in designs' flags on fs.
func (o *NodeplugOptions) AddFlags(fs *pflag.FlagSet) {
	for _, d := range o.designs {
		d.addFlags(fs)
	}
}

// NamedFlagSet returns nodeplug's flags as their own section of --help;
// it has no flags when no design is compiled in.
func (o *NodeplugOptions) NamedFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("nodeplug", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	o.AddFlags(fs)
	return fs
}

// Validate checks the options against the kubelet's root dir and returns
// every problem found, joined.
func (o *NodeplugOptions) Validate(rootDir string) error {
	var errs []error
	for _, d := range o.designs {
		errs = append(errs, d.validate(rootDir)...)
	}
	return errors.Join(errs...)
}

// Enabled reports whether any nodeplug feature is switched on.
func (o *NodeplugOptions) Enabled() bool {
	return slices.ContainsFunc(o.designs, func(d *design) bool { return d.enabled() })
}

// enabledNames returns the names of the designs switched on.
func (o *NodeplugOptions) enabledNames() []string {
	var names []string
	for _, d := range o.designs {
		if d.name != "" && d.enabled() {
			names = append(names, d.name)
		}
	}
	return names
}
