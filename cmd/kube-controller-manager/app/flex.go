package app

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/pkg/volume"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	npflex "github.com/nodeplug/nodeplug/pkg/volume/flexvolume"
)

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
			// Until the node informer has synced the check fails, which the
			// prober counts as "in use": no driver is unloaded on a guess.
			inUse := prober.NewNodeStatusInUseChecker(nodes.Lister(), nodes.Informer().HasSynced)
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
