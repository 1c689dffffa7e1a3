//go:build nodeplug_no_flexdiscovery && nodeplug_no_mountpods

package app

import (
	"context"

	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
)

// Run is upstream's Run: no design that changes the volume controllers is
// compiled in, so nodeplug's Run (run.go, controllers.go, volume.go) is
// left out, and hooks is always empty.
func Run(ctx context.Context, c *config.CompletedConfig, _ *VolumeHooks) error {
	return upstream.Run(ctx, c)
}
