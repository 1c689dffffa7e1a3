//go:build !nodeplug_no_localpvcheck

package app

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck"
	"github.com/nodeplug/nodeplug/pkg/localpv/volumecheck/localplugin"
)

// localPVCheckFlag switches the localpvcheck design on.
const localPVCheckFlag = "experimental-local-volume-identity-check"

// localPVCheckOptions are the localpvcheck design's flags.
type localPVCheckOptions struct {
	// on proves local PVs' disks before pods see them.
	on bool
}

// newLocalPVCheck returns the localpvcheck design: upstream's local volume
// plugin wrapped so that a local PV's disk is proven against the identity
// nodeplug's provisioner recorded before it is mounted, formatted or
// mapped for a pod (pkg/localpv/volumecheck).
func newLocalPVCheck() *design {
	o := &localPVCheckOptions{}
	return &design{Name: "localpvcheck", AddFlags: o.AddFlags, Validate: o.Validate, Enabled: func() bool { return o.on },
		Start: func(ctx context.Context, _ *options.KubeletServer, deps *kubelet.Dependencies, _ *v1.ObjectReference) error {
			return useLocalPVCheck(ctx, deps)
		}}
}

// AddFlags registers the check's flag on fs.
func (o *localPVCheckOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.on, localPVCheckFlag, o.on,
		"Before a local PersistentVolume's disk reaches a pod (mount, device mount or block map, also after a kubelet restart "+
			"or node reboot), prove that the PV's spec.local.path leads to the disk that nodeplug's local volume provisioner "+
			"recorded for it (localpv.nodeplug.io/disk-id). On a mismatch, or when a strong recorded identity cannot be read, "+
			"nothing is mounted or written and the pod waits with a FailedMount event naming the disk found; it starts once the "+
			"mounts are restored. PVs without a recorded identity are mounted as upstream does.")
}

// Validate refuses the check where disk identities cannot be read.
func (o *localPVCheckOptions) Validate(string) []error {
	if o.on && runtime.GOOS != "linux" {
		return []error{fmt.Errorf("--%s reads disk identities from Linux interfaces and is not supported on %s", localPVCheckFlag, runtime.GOOS)}
	}
	return nil
}

// useLocalPVCheck wraps the local plugin in deps.VolumePlugins, which may
// already be mount pods' wrapper (the two compose in either order).
func useLocalPVCheck(ctx context.Context, deps *kubelet.Dependencies) error {
	logger := klog.FromContext(ctx).WithName("localpvcheck")
	volumecheck.RegisterMetrics()
	plugins, err := localplugin.Wrap(deps.VolumePlugins, volumecheck.New(logger, nil))
	if err != nil {
		return fmt.Errorf("--%s: %w", localPVCheckFlag, err)
	}
	deps.VolumePlugins = plugins
	logger.Info("Nodeplug local volume identity check enabled")
	return nil
}
