//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

import (
	"context"
	"fmt"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/volume/attachdetach"
	"k8s.io/kubernetes/pkg/controller/volume/selinuxwarning"
	"k8s.io/kubernetes/pkg/volume"
)

func (h *VolumeHooks) prober(ctx context.Context, consumer string, cc upstream.ControllerContext) (volume.DynamicPluginProber, error) {
	if h == nil || h.Prober == nil {
		return upstream.GetDynamicPluginProber(ctx, cc.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration), nil
	}
	return h.Prober(ctx, consumer, cc)
}

// buildVolumeControllers removes the attach/detach and SELinux-warning
// descriptors from descriptors and, for those enabled, builds the
// controllers with the hooks. It stands in for upstream's unexported
// newPersistentVolumeAttachDetachController and newSELinuxWarningController.
func (h *VolumeHooks) buildVolumeControllers(ctx context.Context, cc upstream.ControllerContext,
	descriptors map[string]*upstream.ControllerDescriptor) ([]upstream.Controller, error) {
	var out []upstream.Controller
	for _, name := range []string{names.PersistentVolumeAttachDetachController, names.SELinuxWarningController} {
		desc, ok := descriptors[name]
		if !ok {
			continue
		}
		delete(descriptors, name)
		if !cc.IsControllerEnabled(desc) || !gatesEnabled(desc) {
			klog.FromContext(ctx).Info("Warning: controller is disabled", "controller", name)
			continue
		}
		build := h.newAttachDetach
		if name == names.SELinuxWarningController {
			build = h.newSELinuxWarning
		}
		ctrl, err := build(ctx, cc, name)
		if err != nil {
			return nil, err
		}
		out = append(out, ctrl)
	}
	return out, nil
}

func gatesEnabled(desc *upstream.ControllerDescriptor) bool {
	for _, g := range desc.GetRequiredFeatureGates() {
		if !utilfeature.DefaultFeatureGate.Enabled(g) {
			return false
		}
	}
	return true
}

func (h *VolumeHooks) newAttachDetach(ctx context.Context, cc upstream.ControllerContext, name string) (upstream.Controller, error) {
	cfg := cc.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration
	plugins, err := upstream.ProbeAttachableVolumePlugins(klog.FromContext(ctx), cfg)
	if err != nil {
		return nil, fmt.Errorf("probing volume plugins for the attach/detach controller: %w", err)
	}
	prober, err := h.prober(ctx, name, cc)
	if err != nil {
		return nil, fmt.Errorf("flexvolume prober for the attach/detach controller: %w", err)
	}
	client, err := cc.NewClient("attachdetach-controller")
	if err != nil {
		return nil, err
	}
	informers := cc.InformerFactory
	adc := cc.ComponentConfig.AttachDetachController
	var pods coreinformers.PodInformer = informers.Core().V1().Pods()
	if h.AttachDetachPods != nil {
		pods = h.AttachDetachPods(ctx, cc, pods)
	}
	ctrl, err := attachdetach.NewAttachDetachController(ctx, client,
		pods, informers.Core().V1().Nodes(),
		informers.Core().V1().PersistentVolumeClaims(), informers.Core().V1().PersistentVolumes(),
		informers.Storage().V1().CSINodes(), informers.Storage().V1().CSIDrivers(), informers.Storage().V1().VolumeAttachments(),
		plugins, prober, adc.DisableAttachDetachReconcilerSync, adc.ReconcilerSyncLoopPeriod.Duration,
		adc.DisableForceDetachOnTimeout, attachdetach.DefaultTimerConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the attach/detach controller: %w", err)
	}
	return namedController{name: name, run: ctrl.Run}, nil
}

func (h *VolumeHooks) newSELinuxWarning(ctx context.Context, cc upstream.ControllerContext, name string) (upstream.Controller, error) {
	cfg := cc.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration
	plugins, err := upstream.ProbePersistentVolumePlugins(klog.FromContext(ctx), cfg)
	if err != nil {
		return nil, fmt.Errorf("probing volume plugins for the SELinux warning controller: %w", err)
	}
	prober, err := h.prober(ctx, name, cc)
	if err != nil {
		return nil, fmt.Errorf("flexvolume prober for the SELinux warning controller: %w", err)
	}
	client, err := cc.NewClient(name)
	if err != nil {
		return nil, err
	}
	informers := cc.InformerFactory
	ctrl, err := selinuxwarning.NewController(ctx, client, informers.Core().V1().Pods(),
		informers.Core().V1().PersistentVolumeClaims(), informers.Core().V1().PersistentVolumes(),
		informers.Storage().V1().CSIDrivers(), plugins, prober)
	if err != nil {
		return nil, fmt.Errorf("creating the SELinux warning controller: %w", err)
	}
	return namedController{name: name, run: func(ctx context.Context) { ctrl.Run(ctx, 1) }}, nil
}
