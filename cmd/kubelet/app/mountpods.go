//go:build !nodeplug_no_mountpods

package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/flexadapter"
	"github.com/nodeplug/nodeplug/pkg/mountpod"
	"github.com/nodeplug/nodeplug/pkg/mountpod/flexdrivers"
	"github.com/nodeplug/nodeplug/pkg/mountpod/localadapter"
	"github.com/nodeplug/nodeplug/pkg/mountpod/mounter"
	"github.com/nodeplug/nodeplug/pkg/mountpod/podexec"
	"github.com/nodeplug/nodeplug/pkg/util/groupexec"
)

// podDriverDirName is the directory under --root-dir where the flexvolume
// drivers that mount pods serve are published (pkg/mountpod/flexdrivers).
const podDriverDirName = "mount-pod-drivers"

// mountPodOptions are the mountpods design's flags.
type mountPodOptions struct {
	// namespace is the namespace of the mount pods that run volume
	// utilities. Empty means off.
	namespace string
	// execTimeout bounds a mount utility (mount, umount, mkfs, fsck,
	// blkid) run in a mount pod.
	execTimeout time.Duration
}

// newMountPods returns the mountpods design. It uses nodeplug's flexvolume
// prober (flex), which it hands the runner of drivers in mount pods: so
// --experimental-mount-namespace implies flexvolume discovery, and the
// prober is compiled in with mount pods even under nodeplug_no_flexdiscovery.
func newMountPods(flex *flexDrivers) *design {
	o := &mountPodOptions{execTimeout: podexec.DefaultTimeout}
	on := func() bool { return o.namespace != "" }
	flex.users.Add(on)
	return &design{Name: "mountpods", AddFlags: o.AddFlags, Validate: o.Validate, Enabled: on,
		Start: func(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, node *v1.ObjectReference) error {
			mp, err := useMountPods(ctx, s, deps, o, node)
			if err != nil {
				return err
			}
			flex.pods = &podDrivers{runner: mp.router.ForFlexDrivers(mp.driverDir), dir: mp.driverDir,
				loaded: func(p *flexadapter.Source) { mp.podProber = p }}
			return nil
		}}
}

// AddFlags registers the mount pods' flags on fs.
func (o *mountPodOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.namespace, "experimental-mount-namespace", o.namespace,
		"Namespace (use kube-mount) of the pods that run volume utilities: mount, mkfs, fsck, blkid and flexvolume drivers run "+
			"in a Running, Ready pod on this node labelled mount.kubernetes.io/<plugin>=true (or "+
			"flexvolume.mount.kubernetes.io/<escaped driver>=true) instead of on the host. Empty disables it. "+
			"Implies nodeplug's flexvolume discovery.")
	fs.DurationVar(&o.execTimeout, "experimental-mount-pod-exec-timeout", o.execTimeout,
		"Bound of mount, umount, mkfs, fsck and blkid run in a mount pod (--experimental-mount-namespace). Flexvolume driver calls "+
			"in a mount pod have the bound of --experimental-flex-call-timeout instead.")
}

// Validate checks the exec timeout and the namespace's name.
func (o *mountPodOptions) Validate(string) []error {
	var errs []error
	if o.execTimeout < 0 {
		errs = append(errs, fmt.Errorf("--experimental-mount-pod-exec-timeout: %v is negative", o.execTimeout))
	}
	if o.namespace != "" {
		if msgs := validation.IsDNS1123Label(o.namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--experimental-mount-namespace: %q is not a namespace name: %s",
				o.namespace, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// mountPods is the wiring of --experimental-mount-namespace.
type mountPods struct {
	finder    *mountpod.InformerFinder
	router    *podexec.Router
	driverDir string
	// podProber loads the drivers published in driverDir; set when
	// flexvolume discovery starts (flexDrivers.start).
	podProber *flexadapter.Source
}

// startupLoadTimeout bounds how long the kubelet's start waits for the pod
// cache and the drivers that mount pods serve.
const startupLoadTimeout = 15 * time.Second

// useMountPods routes volume utilities into mount pods in namespace ns:
// mount/umount through a wrapping Mounter, the local plugin's mkfs, fsck and
// blkid through a wrapped plugin, flexvolume drivers through the runner the
// flex prober is given (see flexDrivers.start). The pod informer starts
// once upstream has built the kubelet's API client.
func useMountPods(ctx context.Context, s *options.KubeletServer, deps *kubelet.Dependencies, o *mountPodOptions, node *v1.ObjectReference) (*mountPods, error) {
	ns := o.namespace
	if s.KubeConfig == "" {
		// Standalone: no API server, so no pod informer. Routing would fail
		// every mount forever, waiting for a cache that never syncs.
		return nil, fmt.Errorf("--experimental-mount-namespace=%s needs an API server to find mount pods, and this kubelet runs standalone (no --kubeconfig); "+
			"remove the flag or give the kubelet a kubeconfig", ns)
	}
	root, err := filepath.Abs(s.RootDirectory)
	if err != nil {
		return nil, fmt.Errorf("--root-dir %q: %w", s.RootDirectory, err)
	}
	if err := ensureSharedRoot(root); err != nil {
		return nil, err
	}
	cri, err := podexec.NewCRIExecutor(s.ContainerRuntimeEndpoint, 0)
	if err != nil {
		return nil, fmt.Errorf("--experimental-mount-namespace: %w", err)
	}
	mp := &mountPods{finder: mountpod.NewFinder(ns, node.Name), driverDir: filepath.Join(root, podDriverDirName)}
	// A pod whose spec does not mount the root dir with Bidirectional
	// propagation serves nothing: its mounts would not reach the host.
	mp.finder.RequirePropagation(root)
	mp.router = podexec.NewRouter(mp.finder, cri, groupexec.New(), podexec.Options{Timeout: o.execTimeout})
	podMounter := mounter.New(ctx, deps.Mounter, root, mp.router)
	deps.Mounter = podMounter
	if deps.VolumePlugins, err = localadapter.Wrap(deps.VolumePlugins, podMounter.Operation); err != nil {
		return nil, fmt.Errorf("--experimental-mount-namespace: %w", err)
	}
	pub := flexdrivers.New(mp.driverDir, mp.finder)
	if err := pub.Reset(); err != nil {
		return nil, fmt.Errorf("--experimental-mount-namespace: %w", err)
	}
	deps.Options = append(deps.Options, func(*kubelet.Kubelet) { mp.start(ctx, deps, pub, root) })
	klog.FromContext(ctx).Info("Nodeplug mount utilities in pods enabled", "namespace", ns, "node", node.Name,
		"runtimeEndpoint", s.ContainerRuntimeEndpoint, "podDriverDir", mp.driverDir)
	return mp, nil
}

// start starts the pod informer once upstream has built the kubelet's API
// client and event recorder. If it cannot, mount pods are disabled:
// utilities run on the host, never routed to a cache that cannot sync.
func (mp *mountPods) start(ctx context.Context, deps *kubelet.Dependencies, pub *flexdrivers.Publisher, root string) {
	logger := klog.FromContext(ctx)
	err := errors.New("the kubelet has no API server client")
	if deps.KubeClient != nil {
		err = mp.finder.Start(ctx, deps.KubeClient, pub.Handler(), mountpod.NewMisconfigReporter(root, deps.Recorder))
	}
	if err != nil {
		mp.finder.Disable(err)
		logger.Error(err, "Mount pods are disabled: volume utilities run on the host", "namespace", mp.finder.Namespace())
		return
	}
	mp.loadServedDrivers(ctx, pub)
	go pub.Run(ctx)
}

// loadServedDrivers publishes the drivers that mount pods serve and waits
// until the flex prober has loaded them, for at most startupLoadTimeout. It
// runs before the kubelet's volume manager starts, so that volumes of
// pod-served drivers that were mounted before a kubelet restart are
// reconstructed instead of being reported as having no plugin.
func (mp *mountPods) loadServedDrivers(ctx context.Context, pub *flexdrivers.Publisher) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, startupLoadTimeout)
	defer cancel()
	if !mp.finder.WaitForSync(ctx) {
		logger.Info("Mount pod cache not synced at start-up; pod-served flexvolume drivers load when it is", "timeout", startupLoadTimeout)
		return
	}
	served, err := pub.Sync(ctx)
	if err != nil {
		logger.Error(err, "Publishing flexvolume drivers of mount pods failed")
	}
	if mp.podProber == nil || len(served) == 0 {
		return
	}
	for snap := mp.podProber.Library().Snapshot(); ; snap = mp.podProber.Library().Snapshot() {
		missing := slices.DeleteFunc(slices.Clone(served), func(name string) bool { return snap.Entries[name] != nil })
		if len(missing) == 0 {
			logger.Info("Flexvolume drivers of mount pods loaded", "drivers", served)
			return
		}
		select {
		case <-snap.Changed():
		case <-ctx.Done():
			logger.Info("Flexvolume drivers of mount pods not loaded yet at start-up", "missing", missing)
			return
		}
	}
}

// ensureSharedRoot puts root on a shared mount (bind mount and
// make-rshared when it is not), so that mounts made in mount pods reach the
// host and the pods that use them. Upstream's kubelet does the same later
// in its start-up; doing it here fails before anything else starts, with
// the commands that fix it.
func ensureSharedRoot(root string) error {
	if err := os.MkdirAll(root, 0o750); err != nil {
		return fmt.Errorf("--experimental-mount-namespace: creating the kubelet root dir %s: %w", root, err)
	}
	if err := hostutil.NewHostUtil().MakeRShared(root); err != nil {
		return fmt.Errorf("--experimental-mount-namespace needs the kubelet root dir %s on a shared mount, and making it one failed: %w; "+
			"run 'mount --bind %s %s && mount --make-rshared %s' on the host (or start the kubelet where it may mount)",
			root, err, root, root, root)
	}
	return nil
}
