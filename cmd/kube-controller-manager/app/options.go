package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
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
}

// NewNodeplugOptions returns the defaults: every feature off.
func NewNodeplugOptions() *NodeplugOptions {
	return &NodeplugOptions{MountPodDriverDir: filepath.Join(os.TempDir(), "nodeplug-mount-pod-drivers")}
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
	fs.StringVar(&o.MountPodDriverDir, "experimental-mount-pod-driver-dir", o.MountPodDriverDir,
		"Directory where the flexvolume drivers that mount pods serve are published for discovery (emptied at start).")
}

// Validate checks the options. leaderMigration says whether upstream's
// leader migration is configured, which nodeplug's Run does not support.
func (o *NodeplugOptions) Validate(leaderMigration bool) []error {
	var errs []error
	if o.Enabled() && leaderMigration {
		errs = append(errs, errLeaderMigration)
	}
	if o.MountNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.MountNamespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--experimental-mount-namespace: %q is not a namespace name: %s", o.MountNamespace, strings.Join(msgs, "; ")))
		}
		if !filepath.IsAbs(o.MountPodDriverDir) {
			errs = append(errs, fmt.Errorf("--experimental-mount-pod-driver-dir: %q is not an absolute path", o.MountPodDriverDir))
		}
	}
	return errs
}

// Enabled reports whether any nodeplug feature is switched on.
func (o *NodeplugOptions) Enabled() bool { return o.FlexVolumeDiscovery || o.MountNamespace != "" }
