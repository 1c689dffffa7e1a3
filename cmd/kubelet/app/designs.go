package app

import (
	"context"
	"errors"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/nodeplug/nodeplug/pkg/designs"
)

// design is one nodeplug design compiled into this kubelet (pkg/designs).
// Each lives in files built unless its tag is given (flexdiscovery.go:
// nodeplug_no_flexdiscovery, pluginwatcher.go: nodeplug_no_pluginwatcher,
// mountpods.go: nodeplug_no_mountpods, localpvcheck.go:
// nodeplug_no_localpvcheck); the file built with the tag
// instead returns no design. Validate gets the kubelet's --root-dir.
type design = designs.Design[startFunc]

// startFunc is a design's start hook (designs.Design.Start; the
// controller-manager's has the same name): it changes the kubelet's
// dependencies (see CustomizeDependencies).
type startFunc func(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, node *v1.ObjectReference) error

// NodeplugOptions are the kubelet flags of the nodeplug designs compiled
// in. Every one is named --experimental-*, and their zero values leave the
// kubelet exactly as upstream builds it.
type NodeplugOptions struct {
	// The designs' hooks run in this order: mount pods hand flexvolume
	// discovery the runner of drivers before it starts, and the kubelet
	// Options they append run in the same order. The local volume
	// identity check wraps the local plugin last, around mount pods'
	// wrapper when both are on (either order works).
	*designs.List[startFunc]
}

// NewNodeplugOptions returns the defaults of the compiled-in designs: every
// feature off.
func NewNodeplugOptions() *NodeplugOptions {
	flex := newFlexDrivers()
	return &NodeplugOptions{designs.NewList(newFlexDiscovery(flex), newMountPods(flex), flex.design(), newPluginWatcher(), newLocalPVCheck())}
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
	return errors.Join(o.List.Validate(rootDir)...)
}
