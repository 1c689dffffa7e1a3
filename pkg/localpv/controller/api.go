package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
)

// CRDManifest is the NodeDiskState CustomResourceDefinition in the nodeplug
// repository; `kubectl apply -k deploy/local-volume-provisioner` applies it
// with the rest.
const CRDManifest = "deploy/local-volume-provisioner/crd.yaml"

// ErrNodeDiskStateAPIMissing means that the apiserver does not serve
// NodeDiskStates: their CustomResourceDefinition is not installed, or not
// established yet.
var ErrNodeDiskStateAPIMissing = errors.New("the apiserver does not serve " +
	v1alpha1.SchemeGroupVersion.String() + " " + v1alpha1.Resource)

var errNodeDiskStateAPIMissing = fmt.Errorf("%w: the CustomResourceDefinition %s.%s is not installed; apply %s "+
	"(kubectl apply -f %s, or kubectl apply -k deploy/local-volume-provisioner for everything)",
	ErrNodeDiskStateAPIMissing, v1alpha1.Resource, v1alpha1.GroupName, CRDManifest, CRDManifest)

// CheckNodeDiskStateAPI asks the apiserver's discovery whether it serves
// NodeDiskStates, which the master watches. It returns an error wrapping
// ErrNodeDiskStateAPIMissing, naming the CRD and its manifest, when it does
// not.
func CheckNodeDiskStateAPI(ctx context.Context, disco discovery.ServerResourcesInterfaceWithContext) error {
	gv := v1alpha1.SchemeGroupVersion.String()
	list, err := disco.ServerResourcesForGroupVersionWithContext(ctx, gv)
	switch {
	case apierrors.IsNotFound(err):
		return errNodeDiskStateAPIMissing
	case err != nil:
		return fmt.Errorf("failed to discover the resources of %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == v1alpha1.Resource {
			return nil
		}
	}
	return errNodeDiskStateAPIMissing
}

// WaitForNodeDiskStateAPI runs CheckNodeDiskStateAPI every interval until
// it succeeds, for at most timeout: a CRD applied together with the master
// takes a moment to be established. The reason of the first failure is
// logged at once, as information; the last failure is returned on timeout.
func WaitForNodeDiskStateAPI(ctx context.Context, disco discovery.ServerResourcesInterfaceWithContext, interval, timeout time.Duration) error {
	logger := klog.FromContext(ctx)
	deadline := time.Now().Add(timeout)
	var last error
	// Each check runs with ctx, not with a context that ends at the
	// deadline: a request cut short there would report the deadline instead
	// of what the apiserver answered.
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		err := CheckNodeDiskStateAPI(ctx, disco)
		switch {
		case err == nil:
			if last != nil {
				logger.Info("NodeDiskState API available")
			}
			return true, nil
		case last == nil:
			logger.Info("Waiting for the NodeDiskState API", "err", err, "timeout", timeout)
		}
		last = err
		if time.Now().After(deadline) {
			return false, fmt.Errorf("gave up after %s: %w", timeout, err)
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
