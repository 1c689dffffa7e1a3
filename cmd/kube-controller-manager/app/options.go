package app

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/mountpod/flexdrivers"
)

// NodeplugOptions are the controller-manager flags that nodeplug adds to
// upstream's. Their zero values leave the binary exactly as upstream's.
type NodeplugOptions struct {
	// FlexVolumeDiscovery replaces upstream's flexvolume prober with
	// nodeplug's on --flex-volume-plugin-dir, shared by the attach/detach
	// and SELinux-warning controllers.
	FlexVolumeDiscovery bool
	// MountNamespace is the namespace of the mount pods in which flexvolume
	// drivers run (through pods/exec). Empty means off.
	MountNamespace string
	// MountPodDriverDir is where the drivers that only mount pods have are
	// published for the prober.
	MountPodDriverDir string
	// FlexCallTimeout bounds every flexvolume driver call but init and
	// waitforattach; 0 is none, as upstream.
	FlexCallTimeout time.Duration
	// FlexInitTimeout bounds a driver's init, run while drivers are
	// discovered.
	FlexInitTimeout time.Duration
}

// NewNodeplugOptions returns the defaults: every feature off.
func NewNodeplugOptions() *NodeplugOptions {
	return &NodeplugOptions{MountPodDriverDir: flexdrivers.DefaultControllerManagerDir, FlexInitTimeout: driver.DefaultInitTimeout}
}

// AddFlags registers nodeplug's flags on fs.
func (o *NodeplugOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.FlexVolumeDiscovery, "experimental-flexvolume-discovery", o.FlexVolumeDiscovery,
		"Use nodeplug's event-driven flexvolume driver discovery on --flex-volume-plugin-dir instead of upstream's prober. "+
			"The attach/detach and SELinux-warning controllers share one watcher.")
	fs.StringVar(&o.MountNamespace, "experimental-mount-namespace", o.MountNamespace,
		"Namespace (use kube-mount) of the mount pods: flexvolume driver commands (attach, detach, isattached, getvolumename, init) "+
			"run through pods/exec in a Running, Ready pod labelled flexvolume.mount.kubernetes.io/<escaped driver>=true, "+
			"preferring the pod on the node the command names; drivers that only such pods have are loaded while one runs. "+
			"Needs RBAC on pods and pods/exec in that namespace (deploy/mount-utilities). Empty disables it. Implies nodeplug's flexvolume discovery.")
	driver.AddTimeoutFlags(fs, &o.FlexCallTimeout, &o.FlexInitTimeout)
	fs.StringVar(&o.MountPodDriverDir, "experimental-mount-pod-driver-dir", o.MountPodDriverDir,
		"Directory where the flexvolume drivers that mount pods serve are published for discovery. nodeplug creates it with a marker file and empties it at start; "+
			"it refuses a directory it did not create that holds anything, system directories, and the flexvolume plugin dir.")
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
	errs = append(errs, driver.ValidateTimeouts(o.FlexCallTimeout, o.FlexInitTimeout)...)
	if o.MountNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.MountNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--experimental-mount-namespace: %q is not a namespace name: %s", o.MountNamespace, strings.Join(msgs, "; ")))
		}
		if err := flexdrivers.CheckDir(o.MountPodDriverDir, flexPluginDir); err != nil {
			errs = append(errs, fmt.Errorf("--experimental-mount-pod-driver-dir: %w", err))
		}
	}
	return errs
}

// Enabled reports whether any nodeplug feature is switched on.
func (o *NodeplugOptions) Enabled() bool { return o.FlexVolumeDiscovery || o.MountNamespace != "" }
