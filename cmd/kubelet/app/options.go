package app

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/volume/util/volexec"
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
	// MountNamespace is the namespace of the mount pods that run volume
	// utilities (mount utilities in pods). Empty means off.
	MountNamespace string
	// FlexCallTimeout bounds every flexvolume driver call but init and
	// waitforattach; 0 is none, as upstream.
	FlexCallTimeout time.Duration
	// FlexInitTimeout bounds a driver's init, run while drivers are
	// discovered.
	FlexInitTimeout time.Duration
	// MountPodExecTimeout bounds a mount utility (mount, umount, mkfs,
	// fsck, blkid) run in a mount pod.
	MountPodExecTimeout time.Duration
}

// NewNodeplugOptions returns the defaults: every feature off.
func NewNodeplugOptions() *NodeplugOptions {
	return &NodeplugOptions{PluginNamePolicy: "Warn", FlexInitTimeout: driver.DefaultInitTimeout, MountPodExecTimeout: volexec.DefaultTimeout}
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
	fs.StringVar(&o.MountNamespace, "experimental-mount-namespace", o.MountNamespace,
		"Namespace (use kube-mount) of the pods that run volume utilities: mount, mkfs, fsck, blkid and flexvolume drivers run "+
			"in a Running, Ready pod on this node labelled mount.kubernetes.io/<plugin>=true (or "+
			"flexvolume.mount.kubernetes.io/<escaped driver>=true) instead of on the host. Empty disables it. "+
			"Implies nodeplug's flexvolume discovery.")
	driver.AddTimeoutFlags(fs, &o.FlexCallTimeout, &o.FlexInitTimeout)
	fs.DurationVar(&o.MountPodExecTimeout, "experimental-mount-pod-exec-timeout", o.MountPodExecTimeout,
		"Bound of mount, umount, mkfs, fsck and blkid run in a mount pod (--experimental-mount-namespace). Flexvolume driver calls "+
			"in a mount pod have the bound of --experimental-flex-call-timeout instead.")
}

// NamedFlagSet returns nodeplug's flags as their own section of --help.
func (o *NodeplugOptions) NamedFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("nodeplug", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	o.AddFlags(fs)
	return fs
}

// Validate checks the options against the kubelet's root dir and returns
// every problem found, joined.
func (o *NodeplugOptions) Validate(rootDir string) error {
	errs := driver.ValidateTimeouts(o.FlexCallTimeout, o.FlexInitTimeout)
	if o.MountPodExecTimeout < 0 {
		errs = append(errs, fmt.Errorf("--experimental-mount-pod-exec-timeout: %v is negative", o.MountPodExecTimeout))
	}
	if o.MountNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.MountNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--experimental-mount-namespace: %q is not a namespace name: %s",
				o.MountNamespace, strings.Join(msgs, "; ")))
		}
	}
	switch o.PluginNamePolicy {
	case "Warn", "Reject":
	default:
		errs = append(errs, fmt.Errorf("--experimental-plugin-name-policy: %q is not one of Warn, Reject", o.PluginNamePolicy))
	}
	if o.PluginRegistrationDir != "" {
		errs = append(errs, o.validateRegistrationDir(rootDir))
	}
	return errors.Join(errs...)
}

// validateRegistrationDir checks that --experimental-plugin-registration-dir
// is absolute and apart from upstream's plugin manager directory.
func (o *NodeplugOptions) validateRegistrationDir(rootDir string) error {
	dir := filepath.Clean(o.PluginRegistrationDir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("--experimental-plugin-registration-dir: %q is not an absolute path", o.PluginRegistrationDir)
	}
	root, err := filepath.Abs(rootDir)
	if err != nil {
		return fmt.Errorf("--root-dir %q: %w", rootDir, err)
	}
	upstreamDir := filepath.Join(root, kubeletconfig.DefaultKubeletPluginsRegistrationDirName)
	// The watch is recursive, so a parent of upstream's directory would
	// watch upstream's sockets too, and a subdirectory would be watched by
	// both. Symlinks are resolved where the paths already exist.
	if overlaps(resolve(dir), resolve(upstreamDir)) {
		return fmt.Errorf("--experimental-plugin-registration-dir: %q overlaps %s, upstream's plugin manager directory; "+
			"two watchers on one directory would conflict, choose a directory outside it (e.g. %s_nodeplug)",
			o.PluginRegistrationDir, upstreamDir, upstreamDir)
	}
	return nil
}

// resolve returns path with symlinks resolved, or path itself when it does
// not exist (yet).
func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// overlaps reports whether a and b are the same directory or one contains
// the other.
func overlaps(a, b string) bool {
	within := func(x, y string) bool {
		rel, err := filepath.Rel(y, x)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	return within(a, b) || within(b, a)
}

// Enabled reports whether any nodeplug feature is switched on.
func (o *NodeplugOptions) Enabled() bool {
	return o.FlexVolumeDiscovery || o.PluginRegistrationDir != "" || o.MountNamespace != ""
}
