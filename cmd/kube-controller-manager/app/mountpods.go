package app

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/mountpod/flexdrivers"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
	"github.com/nodeplug/nodeplug/pkg/volume/util/volexec"
)

// mountPodClient is the name of the client (with
// --use-service-account-credentials, the ServiceAccount in kube-system)
// that watches mount pods and execs into them. deploy/mount-utilities
// grants it pods and pods/exec in the mount namespace only.
const mountPodClient = "nodeplug-mount-pods"

// startupSyncTimeout bounds the wait for the mount pod cache at start.
const startupSyncTimeout = 15 * time.Second

// mountPods is the controller-manager's --experimental-mount-namespace:
// a cluster-wide mount pod finder, pods/exec, and the publisher of the
// drivers that only mount pods have.
type mountPods struct {
	namespace, driverDir string
}

func newMountPods(namespace, driverDir string) *mountPods {
	return &mountPods{namespace: namespace, driverDir: driverDir}
}

// start watches the mount pods, publishes the drivers they serve (waiting
// up to startupSyncTimeout for the pod cache, so that the prober's first
// scan finds them), and returns the runner of flexvolume drivers.
func (mp *mountPods) start(ctx context.Context, cc upstream.ControllerContext) (utilexec.Interface, error) {
	logger := klog.FromContext(ctx)
	cfg, err := cc.ClientBuilder.Config(mountPodClient)
	if err != nil {
		return nil, fmt.Errorf("--experimental-mount-namespace: client for mount pods: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--experimental-mount-namespace: client for mount pods: %w", err)
	}
	finder := mountpod.NewFinder(mp.namespace, "")
	pub := flexdrivers.New(mp.driverDir, finder)
	if err := pub.Reset(); err != nil {
		return nil, fmt.Errorf("--experimental-mount-namespace: %w", err)
	}
	if err := finder.Start(ctx, client, pub.Handler()); err != nil {
		return nil, fmt.Errorf("--experimental-mount-namespace: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, startupSyncTimeout)
	defer cancel()
	if finder.WaitForSync(sctx) {
		if _, err := pub.Sync(ctx); err != nil {
			logger.Error(err, "Publishing flexvolume drivers of mount pods failed")
		}
	} else {
		logger.Info("Mount pod cache not synced at start-up; check the RBAC of the mount pod client",
			"namespace", mp.namespace, "client", mountPodClient, "timeout", startupSyncTimeout)
	}
	go pub.Run(ctx)
	api := volexec.NewAPIExecutor(cfg, client.CoreV1().RESTClient(), nil, 0)
	router := volexec.NewRouter(finder, api, groupexec.New(), volexec.Options{})
	logger.Info("Nodeplug mount utilities in pods enabled", "namespace", mp.namespace, "podDriverDir", mp.driverDir)
	return router.ForFlexDrivers(mp.driverDir), nil
}
