package app

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	npflex "github.com/nodeplug/nodeplug/pkg/volume/flexvolume"
)

// useFlexVolumeDiscovery replaces upstream's flexvolume prober with
// nodeplug's on --volume-plugin-dir (--experimental-flexvolume-discovery).
// Drivers run through groupexec, so that a timed-out driver's whole process
// group is killed. A driver is "in use" while a pod volume or device mount
// of it exists under --root-dir. Problems become Node events once the
// kubelet's recorder exists.
func useFlexVolumeDiscovery(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, node *v1.ObjectReference) error {
	p, err := npflex.NewProber(ctx, s.VolumePluginDir, groupexec.New(), npflex.Options{Options: prober.Options{
		InUse: prober.NewKubeletInUseChecker(s.RootDirectory),
	}})
	if err != nil {
		return fmt.Errorf("flexvolume discovery on %s: %w", s.VolumePluginDir, err)
	}
	deps.DynamicPluginProber = p.NewConsumerView()
	deps.Options = append(deps.Options, func(*kubelet.Kubelet) {
		if deps.Recorder != nil {
			p.SetEventSink(prober.NewRecorderSink(deps.Recorder, node))
		}
	})
	klog.FromContext(ctx).Info("Nodeplug flexvolume discovery enabled", "dir", s.VolumePluginDir)
	return nil
}
