//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	"k8s.io/kubernetes/pkg/volume"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/designs"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/flexadapter"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/podreplay"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

// flexDrivers is nodeplug's flexvolume prober on --volume-plugin-dir. Two
// designs use it: flexdiscovery (--experimental-flexvolume-discovery) and
// mountpods (--experimental-mount-namespace), whose flex drivers run in
// mount pods through it. It is compiled in when either design is, with the
// flags that bound driver calls, and started when either is switched on;
// it has no design name of its own.
type flexDrivers struct {
	// calls bounds the driver calls (--experimental-flex-*-timeout).
	calls driver.Config
	// users say whether the designs that use the prober are on.
	users designs.Switches
	// pods is set by mount pods before the prober starts.
	pods *podDrivers
}

// podDrivers is what mount pods give flexvolume discovery: the runner
// that runs each driver in the pod that serves it, and the directory of
// the drivers that only pods have, whose source loaded is given.
type podDrivers struct {
	runner utilexec.Interface
	dir    string
	loaded func(*flexadapter.Source)
}

func newFlexDrivers() *flexDrivers {
	return &flexDrivers{calls: driver.Config{InitTimeout: driver.DefaultInitTimeout}}
}

// design returns the prober's part of the kubelet: the timeout flags, and
// its start after the designs that use it have set it up.
func (f *flexDrivers) design() *design {
	return designs.Part(f.calls.AddFlags, f.calls.ValidateFlags, &f.users, startFunc(f.start))
}

// start replaces upstream's flexvolume prober with nodeplug's on
// --volume-plugin-dir. Drivers run through groupexec, so that a timed-out
// driver's whole process group is killed; with mount pods (f.pods set)
// through the router, which runs a driver in the pod that serves it, and a
// second prober loads the drivers that only pods have. A driver is "in use"
// while a pod volume or device mount of it exists under --root-dir.
// Problems become Node events once the kubelet's recorder exists.
func (f *flexDrivers) start(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, node *v1.ObjectReference) error {
	runner := utilexec.Interface(groupexec.New())
	dirs := []string{s.VolumePluginDir}
	if f.pods != nil {
		runner = f.pods.runner
		dirs = append(dirs, f.pods.dir)
	}
	var probers []*flexadapter.Source
	var views []volume.DynamicPluginProber
	for _, dir := range dirs {
		p, err := flexadapter.NewSource(ctx, dir, runner, flexadapter.Options{Options: prober.Options{
			InUse:  prober.NewKubeletInUseChecker(s.RootDirectory),
			Driver: f.calls,
		}})
		if err != nil {
			return fmt.Errorf("flexvolume discovery on %s: %w", dir, err)
		}
		probers = append(probers, p)
		views = append(views, p.NewConsumerView())
		if f.pods != nil && dir == f.pods.dir {
			f.pods.loaded(p)
		}
	}
	deps.DynamicPluginProber = flexadapter.NewMultiView(views...)
	deps.Options = append(deps.Options, func(k *kubelet.Kubelet) {
		if deps.Recorder != nil {
			for _, p := range probers {
				p.SetEventSink(prober.NewRecorderSink(deps.Recorder, node))
			}
		}
		for _, p := range probers {
			p.WatchReady(ctx, func(ctx context.Context, drivers []string) { resyncPodsOf(ctx, k, deps, drivers) })
		}
		startInUseReporter(ctx, k, deps, node.Name)
	})
	klog.FromContext(ctx).Info("Nodeplug flexvolume discovery enabled", "dirs", dirs)
	return nil
}

// startInUseReporter reports attachable volumes in use on the node as soon
// as the volume manager wants them (see inUseReporter).
func startInUseReporter(ctx context.Context, k *kubelet.Kubelet, deps *kubelet.Dependencies, nodeName string) {
	logger := klog.FromContext(ctx)
	vm, err := kubeletVolumeManager(k)
	if err != nil {
		logger.Error(err, "Volumes in use are reported by the node status update only")
		return
	}
	if deps.KubeClient == nil {
		return // standalone: no node object
	}
	r := &inUseReporter{vm: vm, client: deps.KubeClient, node: nodeName, marked: sets.New[v1.UniqueVolumeName]()}
	go r.run(ctx, inUseReportInterval)
}

// resyncPodsOf hands the kubelet's pods that use drivers, which just became
// ready, to its pod workers at once: a pod created just before its driver
// loaded would otherwise wait out the backoff of its failed volume set-up.
func resyncPodsOf(ctx context.Context, k *kubelet.Kubelet, deps *kubelet.Dependencies, drivers []string) {
	boundPV := func(namespace, claim string) *v1.PersistentVolume {
		if deps.KubeClient == nil {
			return nil
		}
		pvc, err := deps.KubeClient.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
		if err != nil || pvc.Spec.VolumeName == "" {
			return nil
		}
		pv, err := deps.KubeClient.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return pv
	}
	uses := podreplay.UsesFlexDriversVia(drivers, boundPV)
	var pods []*v1.Pod
	for _, pod := range k.GetActivePods() {
		if uses(pod) {
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		return
	}
	klog.FromContext(ctx).V(2).Info("Flexvolume drivers ready; syncing the pods that use them", "drivers", drivers, "pods", len(pods))

	// A sync fails at once while the volume manager still holds the pod's
	// earlier "no volume plugin matched" error; its populator retries every
	// 100 ms. So sync after it has, and once more in case it was slow.
	for _, after := range resyncDelays {
		select {
		case <-ctx.Done():
			return
		case <-time.After(after):
		}
		k.HandlePodSyncs(ctx, pods)
	}
}

// resyncDelays are the waits before the syncs of resyncPodsOf.
var resyncDelays = []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond}

// inUseReportInterval is how often volumes in use are compared with the
// node's status (in memory) and reported if missing.
const inUseReportInterval = 100 * time.Millisecond
