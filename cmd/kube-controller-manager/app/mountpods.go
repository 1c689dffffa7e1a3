//go:build !nodeplug_no_mountpods

package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/mountpod/flexdrivers"
	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

// mountPodClient is the name of the client (with
// --use-service-account-credentials, the ServiceAccount in kube-system)
// that watches mount pods and execs into them. deploy/mount-utilities
// grants it pods and pods/exec in the mount namespace only.
const mountPodClient = "nodeplug-mount-pods"

// startupSyncTimeout bounds the wait for the mount pod cache at start.
const startupSyncTimeout = 15 * time.Second

// mountPodOptions are the mountpods design's flags.
type mountPodOptions struct {
	// namespace is the namespace of the mount pods in which flexvolume
	// drivers run (through pods/exec). Empty means off.
	namespace string
	// driverDir is where the drivers that only mount pods have are
	// published for the prober.
	driverDir string
}

// newMountPods returns the mountpods design. It uses nodeplug's flexvolume
// probers (flex), which it hands the runner of drivers in mount pods: so
// --experimental-mount-namespace implies flexvolume discovery, and the
// probers are compiled in with mount pods even under
// nodeplug_no_flexdiscovery.
func newMountPods(flex *flexDrivers) *design {
	o := &mountPodOptions{driverDir: flexdrivers.DefaultControllerManagerDir}
	on := func() bool { return o.namespace != "" }
	flex.users.Add(on)
	return &design{Name: "mountpods", AddFlags: o.AddFlags, Validate: o.Validate, Enabled: on,
		Start: func(*VolumeHooks) { flex.pods = (&mountPods{namespace: o.namespace, driverDir: o.driverDir}).start }}
}

// AddFlags registers the mount pods' flags on fs.
func (o *mountPodOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.namespace, "experimental-mount-namespace", o.namespace,
		"Namespace (use kube-mount) of the mount pods: flexvolume driver commands (attach, detach, isattached, getvolumename, init) "+
			"run through pods/exec in a Running, Ready pod labelled flexvolume.mount.kubernetes.io/<escaped driver>=true, "+
			"preferring the pod on the node the command names; drivers that only such pods have are loaded while one runs. "+
			"Needs RBAC on pods and pods/exec in that namespace (deploy/mount-utilities). Empty disables it. Implies nodeplug's flexvolume discovery.")
	fs.StringVar(&o.driverDir, "experimental-mount-pod-driver-dir", o.driverDir,
		"Directory where the flexvolume drivers that mount pods serve are published for discovery. nodeplug creates it with a marker file and empties it at start; "+
			"it refuses a directory it did not create that holds anything, system directories, and the flexvolume plugin dir.")
}

// Validate checks the namespace's name and, when mount pods are on, the
// driver dir against --flex-volume-plugin-dir.
func (o *mountPodOptions) Validate(flexPluginDir string) []error {
	if o.namespace == "" {
		return nil
	}
	var errs []error
	if msgs := validation.IsDNS1123Label(o.namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--experimental-mount-namespace: %q is not a namespace name: %s", o.namespace, strings.Join(msgs, "; ")))
	}
	if err := flexdrivers.CheckDir(o.driverDir, flexPluginDir); err != nil {
		errs = append(errs, fmt.Errorf("--experimental-mount-pod-driver-dir: %w", err))
	}
	return errs
}

// mountPods is the controller-manager's --experimental-mount-namespace:
// a cluster-wide mount pod finder, pods/exec, and the publisher of the
// drivers that only mount pods have.
type mountPods struct {
	namespace, driverDir string
}

// start watches the mount pods, publishes the drivers they serve (waiting
// up to startupSyncTimeout for the pod cache, so that the prober's first
// scan finds them), and returns the runner of flexvolume drivers and the
// directory of the drivers only pods have (a startPodDrivers).
func (mp *mountPods) start(ctx context.Context, cc upstream.ControllerContext) (utilexec.Interface, string, error) {
	logger := klog.FromContext(ctx)
	cfg, err := cc.ClientBuilder.Config(mountPodClient)
	if err != nil {
		return nil, "", fmt.Errorf("--experimental-mount-namespace: client for mount pods: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("--experimental-mount-namespace: client for mount pods: %w", err)
	}
	finder := mountpod.NewFinder(mp.namespace, "")
	pub := flexdrivers.New(mp.driverDir, finder)
	if err := pub.Reset(); err != nil {
		return nil, "", fmt.Errorf("--experimental-mount-namespace: %w", err)
	}
	if err := finder.Start(ctx, client, pub.Handler()); err != nil {
		return nil, "", fmt.Errorf("--experimental-mount-namespace: %w", err)
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
	api := podexec.NewAPIExecutor(cfg, client.CoreV1().RESTClient(), nil, 0)
	router := podexec.NewRouter(finder, api, groupexec.New(), podexec.Options{})
	logger.Info("Nodeplug mount utilities in pods enabled", "namespace", mp.namespace, "podDriverDir", mp.driverDir)
	return router.ForFlexDrivers(mp.driverDir), mp.driverDir, nil
}
