package app

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	"k8s.io/kubernetes/pkg/volume"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	npflex "github.com/nodeplug/nodeplug/pkg/volume/flexvolume"
)

// useFlexVolumeDiscovery replaces upstream's flexvolume prober with
// nodeplug's on --volume-plugin-dir (--experimental-flexvolume-discovery,
// and --experimental-mount-namespace, which needs it). Drivers run through
// groupexec, so that a timed-out driver's whole process group is killed;
// with mount pods (mp not nil) through the router, which runs a driver in
// the pod that serves it, and a second prober loads the drivers that only
// pods have. A driver is "in use" while a pod volume or device mount of it
// exists under --root-dir. Problems become Node events once the kubelet's
// recorder exists.
func useFlexVolumeDiscovery(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, node *v1.ObjectReference, mp *mountPods) error {
	runner := utilexec.Interface(groupexec.New())
	dirs := []string{s.VolumePluginDir}
	if mp != nil {
		runner = mp.router.ForFlexDrivers(mp.driverDir)
		dirs = append(dirs, mp.driverDir)
	}
	var probers []*npflex.Prober
	var views []volume.DynamicPluginProber
	for _, dir := range dirs {
		p, err := npflex.NewProber(ctx, dir, runner, npflex.Options{Options: prober.Options{
			InUse: prober.NewKubeletInUseChecker(s.RootDirectory),
		}})
		if err != nil {
			return fmt.Errorf("flexvolume discovery on %s: %w", dir, err)
		}
		probers = append(probers, p)
		views = append(views, p.NewConsumerView())
		if mp != nil && dir == mp.driverDir {
			mp.podProber = p
		}
	}
	deps.DynamicPluginProber = npflex.NewMultiView(views...)
	deps.Options = append(deps.Options, func(*kubelet.Kubelet) {
		if deps.Recorder != nil {
			for _, p := range probers {
				p.SetEventSink(prober.NewRecorderSink(deps.Recorder, node))
			}
		}
	})
	klog.FromContext(ctx).Info("Nodeplug flexvolume discovery enabled", "dirs", dirs)
	return nil
}
