package app

import (
	"context"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
)

// CustomizeDependencies is the one place where nodeplug changes what the
// embedded upstream kubelet runs with. It is called after upstream's
// UnsecuredDependencies and before upstream's Run; the fields it may replace
// are DynamicPluginProber, Mounter/HostUtil/Subpather, VolumePlugins and
// Options. With no nodeplug flag set it changes nothing.
func CustomizeDependencies(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, np *NodeplugOptions) error {
	if !np.Enabled() {
		return nil
	}
	logger := klog.FromContext(ctx)
	logger.Info("Nodeplug features enabled",
		"flexVolumeDiscovery", np.FlexVolumeDiscovery,
		"pluginRegistrationDir", np.PluginRegistrationDir)
	return nil
}
