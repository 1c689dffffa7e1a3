package app

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/pkg/volume"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	npflex "github.com/nodeplug/nodeplug/pkg/volume/flexvolume"
)

// errNodesNotSynced makes the in-use check fail while the node informer has
// not synced; the prober counts a failed check as "in use", so no driver is
// unloaded on a guess.
var errNodesNotSynced = errors.New("node informer has not synced yet")

// nodeplugFlexProber returns the ProberFactory for
// --experimental-flexvolume-discovery: one nodeplug prober on
// --flex-volume-plugin-dir, created by the first controller that asks,
// with a separate view for each controller. A driver is in use while any
// Node reports one of its volumes attached or in use. The controller-manager
// has no object of its own to record events on, so discovery problems are
// logged and counted in metrics.
func nodeplugFlexProber() ProberFactory {
	var (
		mu sync.Mutex
		p  *npflex.Prober
	)
	return func(ctx context.Context, consumer string, cc upstream.ControllerContext) (volume.DynamicPluginProber, error) {
		mu.Lock()
		defer mu.Unlock()
		if p == nil {
			dir := cc.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration.FlexVolumePluginDir
			nodes := cc.InformerFactory.Core().V1().Nodes()
			byStatus := prober.NewNodeStatusInUseChecker(nodes.Lister())
			inUse := prober.InUseFunc(func(ctx context.Context, name string) (bool, error) {
				if !nodes.Informer().HasSynced() {
					return false, errNodesNotSynced
				}
				return byStatus.DriverInUse(ctx, name)
			})
			var err error
			p, err = npflex.NewProber(ctx, dir, groupexec.New(), npflex.Options{Options: prober.Options{InUse: inUse}})
			if err != nil {
				return nil, fmt.Errorf("flexvolume discovery on %s: %w", dir, err)
			}
			klog.FromContext(ctx).Info("Nodeplug flexvolume discovery enabled", "dir", dir)
		}
		klog.FromContext(ctx).V(2).Info("Sharing the flexvolume prober", "consumer", consumer)
		return p.NewConsumerView(), nil
	}
}
