package app

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// NodeplugOptions are the kubelet flags that nodeplug adds to upstream's.
// Every one is named --experimental-*, and their zero values leave the
// kubelet exactly as upstream builds it.
type NodeplugOptions struct {
	// FlexVolumeDiscovery replaces upstream's flexvolume prober with
	// nodeplug's (pkg/flexvolume/prober) on --volume-plugin-dir.
	FlexVolumeDiscovery bool
	// PluginRegistrationDir starts nodeplug's plugin watcher on this
	// directory. Empty means off.
	PluginRegistrationDir string
	// PluginNamePolicy says what happens when a socket's file name does not
	// carry the name the plugin claims: Warn or Reject.
	PluginNamePolicy string
}

// NewNodeplugOptions returns the defaults: every feature off.
func NewNodeplugOptions() *NodeplugOptions {
	return &NodeplugOptions{PluginNamePolicy: "Warn"}
}

// AddFlags registers nodeplug's flags on fs.
func (o *NodeplugOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.FlexVolumeDiscovery, "experimental-flexvolume-discovery", o.FlexVolumeDiscovery,
		"Use nodeplug's event-driven flexvolume driver discovery on --volume-plugin-dir instead of upstream's prober.")
	fs.StringVar(&o.PluginRegistrationDir, "experimental-plugin-registration-dir", o.PluginRegistrationDir,
		"Directory in which nodeplug's plugin watcher discovers plugin registration sockets. Empty disables the watcher. "+
			"Must not be <root-dir>/plugins_registry, which upstream's plugin manager keeps watching.")
	fs.StringVar(&o.PluginNamePolicy, "experimental-plugin-name-policy", o.PluginNamePolicy,
		"What nodeplug's plugin watcher does when a socket's file name does not carry the plugin's name: Warn or Reject.")
}

// NamedFlagSet returns nodeplug's flags as their own section of --help.
func (o *NodeplugOptions) NamedFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("nodeplug", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	o.AddFlags(fs)
	return fs
}

// Validate checks the options against the kubelet's root dir.
func (o *NodeplugOptions) Validate(rootDir string) error {
	switch o.PluginNamePolicy {
	case "Warn", "Reject":
	default:
		return fmt.Errorf("--experimental-plugin-name-policy: %q is not one of Warn, Reject", o.PluginNamePolicy)
	}
	if o.PluginRegistrationDir == "" {
		return nil
	}
	dir := filepath.Clean(o.PluginRegistrationDir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("--experimental-plugin-registration-dir: %q is not an absolute path", o.PluginRegistrationDir)
	}
	if upstreamDir := filepath.Join(filepath.Clean(rootDir), "plugins_registry"); dir == upstreamDir {
		return fmt.Errorf("--experimental-plugin-registration-dir: %q is upstream's plugin manager directory; "+
			"two watchers on one directory would conflict, choose another directory", o.PluginRegistrationDir)
	}
	return nil
}

// Enabled reports whether any nodeplug feature is switched on.
func (o *NodeplugOptions) Enabled() bool {
	return o.FlexVolumeDiscovery || o.PluginRegistrationDir != ""
}
