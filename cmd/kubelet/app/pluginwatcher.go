//go:build !nodeplug_no_pluginwatcher

package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/handlers"
)

// pluginWatcherOptions are the pluginwatcher design's flags.
type pluginWatcherOptions struct {
	// dir is the directory nodeplug's plugin watcher watches. Empty means
	// off.
	dir string
	// namePolicy says what happens when a socket's file name does not
	// carry the name the plugin claims: Warn or Reject.
	namePolicy string
}

// newPluginWatcher returns the pluginwatcher design: nodeplug's plugin
// watcher on --experimental-plugin-registration-dir.
func newPluginWatcher() *design {
	o := &pluginWatcherOptions{namePolicy: "Warn"}
	return &design{Name: "pluginwatcher", AddFlags: o.AddFlags, Validate: o.Validate,
		Enabled: func() bool { return o.dir != "" }, Start: o.start}
}

// AddFlags registers the plugin watcher's flags on fs.
func (o *pluginWatcherOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.dir, "experimental-plugin-registration-dir", o.dir,
		"Directory in which nodeplug's plugin watcher discovers plugin registration sockets. Empty disables the watcher. "+
			"Must not be <root-dir>/plugins_registry, which upstream's plugin manager keeps watching.")
	fs.StringVar(&o.namePolicy, "experimental-plugin-name-policy", o.namePolicy,
		"What nodeplug's plugin watcher does when a socket's file name does not carry the plugin's name: Warn or Reject.")
}

// Validate checks the name policy and, when set, the registration dir
// against the kubelet's root dir.
func (o *pluginWatcherOptions) Validate(rootDir string) []error {
	var errs []error
	switch o.namePolicy {
	case "Warn", "Reject":
	default:
		errs = append(errs, fmt.Errorf("--experimental-plugin-name-policy: %q is not one of Warn, Reject", o.namePolicy))
	}
	if o.dir != "" {
		if err := o.validateRegistrationDir(rootDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// draPendingReason is what DRA plugins are told while the kubelet's DRA
// manager does not exist yet.
const draPendingReason = "the kubelet's DRA manager starts with its container manager, once the container runtime is up"

// start starts nodeplug's plugin watcher on
// --experimental-plugin-registration-dir with the CSIPlugin, DevicePlugin
// and DRAPlugin handlers, as upstream's kubelet adds them to its plugin
// manager.
//
// The watcher is started from a kubelet Option: by then upstream has run
// the CSI volume plugin's Init (which the CSI handler forwards to) and set
// the event recorder. Validate has checked the directory; a watcher that
// cannot start is logged and the kubelet keeps running, as with upstream's
// plugin manager. The device plugin handler needs nothing from the kubelet
// but the device manager's registration socket, which it retries
// until the device manager listens. The DRA handler is the DRA manager's
// own, which exists only once the kubelet has started its container
// manager: it is added then (addDRAHandler), and DRA plugins that register
// earlier are told why they wait and registered as soon as it is there.
func (o *pluginWatcherOptions) start(ctx context.Context, _ *options.KubeletServer, deps *kubelet.Dependencies, node *v1.ObjectReference) error {
	deps.Options = append(deps.Options, func(*kubelet.Kubelet) {
		logger := klog.FromContext(ctx)
		w, err := pluginwatcher.NewWatcher(o.dir, pluginwatcher.Options{
			IdentityPolicy: pluginwatcher.IdentityPolicy(o.namePolicy),
			Recorder:       deps.Recorder,
			NodeRef:        node,
		})
		if err != nil {
			logger.Error(err, "Plugin watcher not started", "dir", o.dir)
			return
		}
		w.AddHandler(pluginwatcher.CSIPlugin, handlers.CSI())
		w.AddHandler(pluginwatcher.DevicePlugin, handlers.NewDevicePlugin(handlers.DevicePluginOptions{}))
		w.ExpectHandler(pluginwatcher.DRAPlugin, draPendingReason)
		if err := w.Start(ctx); err != nil {
			logger.Error(err, "Plugin watcher not started", "dir", o.dir)
			return
		}
		go addDRAHandler(ctx, w, deps.ContainerManager, handlers.DRAOptions{})
	})
	klog.FromContext(ctx).Info("Nodeplug plugin watcher enabled", "dir", o.dir, "namePolicy", o.namePolicy)
	return nil
}

// addDRAHandler adds the DRA manager's handler to w once the kubelet's
// container manager cm has started (handlers.WaitForDRA), which is when
// upstream's kubelet adds it to its own plugin manager. If that fails for
// another reason than the kubelet stopping, DRA plugins are told why.
func addDRAHandler(ctx context.Context, w pluginwatcher.Watcher, cm handlers.ContainerManager, opts handlers.DRAOptions) {
	logger := klog.FromContext(ctx)
	if cm == nil {
		logger.Error(nil, "DRA plugins cannot register with nodeplug's plugin watcher: the kubelet has no container manager")
		w.ExpectHandler(pluginwatcher.DRAPlugin, "the kubelet has no container manager, hence no DRA manager")
		return
	}
	h, err := handlers.WaitForDRA(ctx, cm, opts)
	if err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "DRA plugins cannot register with nodeplug's plugin watcher")
			w.ExpectHandler(pluginwatcher.DRAPlugin, "the kubelet's DRA manager is not available: "+err.Error())
		}
		return
	}
	w.AddHandler(pluginwatcher.DRAPlugin, h)
	logger.Info("Nodeplug plugin watcher serves DRA plugins")
}

// validateRegistrationDir checks that --experimental-plugin-registration-dir
// is absolute and apart from upstream's plugin manager directory.
func (o *pluginWatcherOptions) validateRegistrationDir(rootDir string) error {
	dir := filepath.Clean(o.dir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("--experimental-plugin-registration-dir: %q is not an absolute path", o.dir)
	}
	root, err := filepath.Abs(rootDir)
	if err != nil {
		return fmt.Errorf("--root-dir %q: %w", rootDir, err)
	}
	upstreamDir := filepath.Join(root, kubeletconfig.DefaultKubeletPluginsRegistrationDirName)
	// The watch is recursive, so a parent of upstream's directory would
	// watch upstream's sockets too, and a subdirectory would be watched by
	// both. Symlinks are resolved where the paths already exist.
	if overlaps(resolve(dir), resolve(upstreamDir)) {
		return fmt.Errorf("--experimental-plugin-registration-dir: %q overlaps %s, upstream's plugin manager directory; "+
			"two watchers on one directory would conflict, choose a directory outside it (e.g. %s_nodeplug)",
			o.dir, upstreamDir, upstreamDir)
	}
	return nil
}

// resolve returns path with symlinks resolved, or path itself when it does
// not exist (yet).
func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// overlaps reports whether a and b are the same directory or one contains
// the other.
func overlaps(a, b string) bool {
	within := func(x, y string) bool {
		rel, err := filepath.Rel(y, x)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	return within(a, b) || within(b, a)
}
