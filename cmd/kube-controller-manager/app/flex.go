package app

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/pkg/volume"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	"github.com/nodeplug/nodeplug/pkg/volume/flexadapter"
)

// flexProbers are the controller-manager's nodeplug flexvolume probers
// (--experimental-flexvolume-discovery): one on --flex-volume-plugin-dir,
// and with --experimental-mount-namespace (mp not nil) one on the
// directory of pod-served drivers, whose drivers run in mount pods through
// pods/exec. They are created by the first controller that asks; each
// controller gets its own view. A driver is in use while any Node reports
// one of its volumes attached or in use. The controller-manager has no
// object of its own to record events on, so discovery problems are logged
// and counted in metrics.
type flexProbers struct {
	mp *mountPods
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
			if f.probers, err = newFlexProbers(ctx, cc, f.mp, f.calls); err != nil {
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
func newFlexProbers(ctx context.Context, cc upstream.ControllerContext, mp *mountPods, calls driver.Config) ([]*flexadapter.Source, error) {
	dirs := []string{cc.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration.FlexVolumePluginDir}
	runner := utilexec.Interface(groupexec.New())
	if mp != nil {
		var err error
		if runner, err = mp.start(ctx, cc); err != nil {
			return nil, err
		}
		dirs = append(dirs, mp.driverDir)
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
