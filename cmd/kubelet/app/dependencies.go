package app

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// CustomizeDependencies is the one place where nodeplug changes what the
// embedded upstream kubelet runs with. It is called after upstream's
// UnsecuredDependencies and before upstream's Run; the fields it may replace
// are DynamicPluginProber, Mounter/HostUtil/Subpather, VolumePlugins and
// Options. --experimental-mount-namespace replaces Mounter, the local
// plugin in VolumePlugins and the flexvolume prober. With no nodeplug flag set it changes nothing.
//
// Work that needs the running kubelet (its event recorder, its initialised
// CSI volume plugin) is appended to deps.Options: upstream's NewMainKubelet
// applies those after it has built the volume plugin manager, on its own
// goroutine, before the kubelet starts syncing pods.
func CustomizeDependencies(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, np *NodeplugOptions) error {
	if !np.Enabled() {
		return nil
	}
	logger := klog.FromContext(ctx)
	logger.Info("Nodeplug features enabled",
		"flexVolumeDiscovery", np.FlexVolumeDiscovery,
		"pluginRegistrationDir", np.PluginRegistrationDir,
		"mountNamespace", np.MountNamespace)
	node, err := newNodeRef(s)
	if err != nil {
		return err
	}
	var mp *mountPods
	if np.MountNamespace != "" {
		if mp, err = useMountPods(ctx, s, deps, np, node); err != nil {
			return err
		}
	}
	if np.FlexVolumeDiscovery || mp != nil {
		if err := useFlexVolumeDiscovery(ctx, s, deps, node, mp, driver.Config{CallTimeout: np.FlexCallTimeout, InitTimeout: np.FlexInitTimeout}); err != nil {
			return err
		}
	}
	if np.PluginRegistrationDir != "" {
		usePluginWatcher(ctx, deps, np, node)
	}
	return nil
}

// newNodeRef returns the reference nodeplug's Node events are recorded
// on. Like upstream's kubelet without a cloud provider, the node name is
// the hostname or --hostname-override, and the UID is the node name.
func newNodeRef(s *options.KubeletServer) (*v1.ObjectReference, error) {
	name, err := nodeutil.GetHostname(s.HostnameOverride)
	if err != nil {
		return nil, fmt.Errorf("determining the node name: %w", err)
	}
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}, nil
}
