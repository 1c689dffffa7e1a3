//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

import (
	"context"
	"fmt"
	"sync"

	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/pkg/volume"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/designs"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/flexadapter"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/podreplay"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

// flexDrivers is nodeplug's flexvolume discovery in the controller-manager.
// Two designs use it: flexdiscovery (--experimental-flexvolume-discovery)
// and mountpods (--experimental-mount-namespace), whose flex drivers run in
// mount pods through it. It is compiled in when either design is, with the
// flags that bound driver calls, and its hooks are added when either is
// switched on; it has no design name of its own.
type flexDrivers struct {
	// calls bounds the driver calls (--experimental-flex-*-timeout).
	calls driver.Config
	// users say whether the designs that use the probers are on.
	users designs.Switches
	// pods is set by mount pods' hook, which runs before this part's.
	pods startPodDrivers
}

// podDrivers is what mount pods give flexvolume discovery, as in the
// kubelet: the runner that runs each driver in the pod that serves it, and
// the directory of the drivers that only pods have.
type podDrivers struct {
	runner utilexec.Interface
	dir    string
}

// startPodDrivers starts the mount pods, when the first volume controller
// asks for a prober, and returns their podDrivers' runner and directory.
type startPodDrivers func(ctx context.Context, cc upstream.ControllerContext) (utilexec.Interface, string, error)

func newFlexDrivers() *flexDrivers {
	return &flexDrivers{calls: driver.Config{InitTimeout: driver.DefaultInitTimeout}}
}

// design returns the probers' part of the controller-manager: the timeout
// flags, and the volume controllers' hooks.
func (f *flexDrivers) design() *design {
	return designs.Part(f.calls.AddFlags, f.calls.ValidateFlags, &f.users, startFunc(func(h *VolumeHooks) {
		p := &flexProbers{pods: f.pods, calls: f.calls}
		h.Prober = p.factory()
		h.AttachDetachPods = p.replayWhenReady
	}))
}

// flexProbers are the controller-manager's nodeplug flexvolume probers:
// one on --flex-volume-plugin-dir, and with --experimental-mount-namespace
// (pods not nil) one on the directory of pod-served drivers, whose drivers
// run in mount pods through pods/exec. They are created by the first
// controller that asks; each controller gets its own view. A driver is in
// use while any Node reports one of its volumes attached or in use. The
// controller-manager has no object of its own to record events on, so
// discovery problems are logged and counted in metrics.
type flexProbers struct {
	pods startPodDrivers
	// calls bounds the driver calls (--experimental-flex-*-timeout).
	calls   driver.Config
	mu      sync.Mutex
	probers []*flexadapter.Source
}

// factory returns the ProberFactory of the volume controllers.
func (f *flexProbers) factory() ProberFactory {
	return func(ctx context.Context, consumer string, cc upstream.ControllerContext) (volume.DynamicPluginProber, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.probers == nil {
			var err error
			if f.probers, err = newFlexProbers(ctx, cc, f.pods, f.calls); err != nil {
				return nil, err
			}
		}
		klog.FromContext(ctx).V(2).Info("Sharing the flexvolume prober", "consumer", consumer)
		views := make([]volume.DynamicPluginProber, 0, len(f.probers))
		for _, p := range f.probers {
			views = append(views, p.NewConsumerView())
		}
		return flexadapter.NewMultiView(views...), nil
	}
}

// watchReady calls fn with the drivers that become ready in any prober.
// Call it after the factory has run.
func (f *flexProbers) watchReady(ctx context.Context, fn func(ctx context.Context, drivers []string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.probers {
		p.WatchReady(ctx, fn)
	}
}

// newFlexProbers starts the probers: --flex-volume-plugin-dir, and with
// mount pods the directory of pod-served drivers.
func newFlexProbers(ctx context.Context, cc upstream.ControllerContext, startPods startPodDrivers, calls driver.Config) ([]*flexadapter.Source, error) {
	dirs := []string{cc.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration.FlexVolumePluginDir}
	runner := utilexec.Interface(groupexec.New())
	if startPods != nil {
		var pods podDrivers
		var err error
		if pods.runner, pods.dir, err = startPods(ctx, cc); err != nil {
			return nil, err
		}
		runner = pods.runner
		dirs = append(dirs, pods.dir)
	}
	nodes := cc.InformerFactory.Core().V1().Nodes()
	// Until the node informer has synced the check fails, which the
	// prober counts as "in use": no driver is unloaded on a guess.
	inUse := prober.NewNodeStatusInUseChecker(nodes.Lister(), nodes.Informer().HasSynced)
	var probers []*flexadapter.Source
	for _, dir := range dirs {
		p, err := flexadapter.NewSource(ctx, dir, runner, flexadapter.Options{Options: prober.Options{InUse: inUse, Driver: calls}})
		if err != nil {
			return nil, fmt.Errorf("flexvolume discovery on %s: %w", dir, err)
		}
		probers = append(probers, p)
	}
	klog.FromContext(ctx).Info("Nodeplug flexvolume discovery enabled", "dirs", dirs)
	return probers, nil
}

// replayWhenReady is the attach/detach controller's AttachDetachPods hook:
// when a driver becomes ready, the controller is handed the pods that use
// it again. Without this, a pod created just before its driver loaded
// waits for the controller's periodic pod re-list (3 minutes).
func (f *flexProbers) replayWhenReady(ctx context.Context, cc upstream.ControllerContext, informer coreinformers.PodInformer) coreinformers.PodInformer {
	pods := podreplay.New(informer)
	pvcs, pvs := cc.InformerFactory.Core().V1().PersistentVolumeClaims().Lister(), cc.InformerFactory.Core().V1().PersistentVolumes().Lister()
	f.watchReady(ctx, func(ctx context.Context, drivers []string) {
		n := pods.Replay(ctx, podreplay.UsesFlexDrivers(drivers, pvcs, pvs))
		klog.FromContext(ctx).V(2).Info("Flexvolume drivers ready; pods handed to the attach/detach controller again", "drivers", drivers, "pods", n)
	})
	return pods.PodInformer()
}
