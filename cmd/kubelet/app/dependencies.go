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
)

// CustomizeDependencies is the one place where nodeplug changes what the
// embedded upstream kubelet runs with. It is called after upstream's
// UnsecuredDependencies and before upstream's Run; the fields it may replace
// are DynamicPluginProber, Mounter/HostUtil/Subpather, VolumePlugins and
// Options. Each compiled-in design that the flags switch on changes them in
// turn (NodeplugOptions); --experimental-mount-namespace replaces Mounter,
// the local plugin in VolumePlugins and the flexvolume prober;
// --experimental-local-volume-identity-check wraps the local plugin (around
// mount pods' wrapper when both are on). With no
// nodeplug flag set it changes nothing.
//
// Work that needs the running kubelet (its event recorder, its initialised
// CSI volume plugin) is appended to deps.Options: upstream's NewMainKubelet
// applies those after it has built the volume plugin manager, on its own
// goroutine, before the kubelet starts syncing pods.
func CustomizeDependencies(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, np *NodeplugOptions) error {
	if !np.Enabled() {
		return nil
	}
	klog.FromContext(ctx).Info("Nodeplug designs enabled", "designs", np.EnabledNames(), "compiledIn", np.Names())
	node, err := newNodeRef(s)
	if err != nil {
		return err
	}
	for _, customize := range np.Starts() {
		if customize == nil {
			continue
		}
		if err := customize(ctx, s, deps, node); err != nil {
			return err
		}
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
