package app

import (
	"context"

	coreinformers "k8s.io/client-go/informers/core/v1"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/pkg/volume"
)

// ProberFactory returns the dynamic plugin prober one controller uses.
// consumer names the controller. Factories that share one watcher return
// a separate view per consumer, because a prober's events are consumed.
type ProberFactory func(ctx context.Context, consumer string, cc upstream.ControllerContext) (volume.DynamicPluginProber, error)

// VolumeHooks is what nodeplug changes in the volume controllers; the
// designs switched on fill it in (NodeplugOptions.VolumeHooks).
type VolumeHooks struct {
	// Prober builds the flexvolume prober of the attach/detach and
	// SELinux-warning controllers. Nil means upstream's.
	Prober ProberFactory
	// AttachDetachPods, if set, is given the attach/detach controller's pod
	// informer after its prober is built, and returns the informer the
	// controller gets. nodeplug's flexvolume discovery wraps it to hand the
	// controller the pods of a driver again when the driver becomes ready.
	AttachDetachPods func(ctx context.Context, cc upstream.ControllerContext, pods coreinformers.PodInformer) coreinformers.PodInformer
}
