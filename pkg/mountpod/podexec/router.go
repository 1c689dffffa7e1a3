package podexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
	utilstrings "k8s.io/utils/strings"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// Options configures a Router. Zero values mean the defaults.
type Options struct {
	// Timeout bounds a mount utility in a pod whose context has no sooner
	// deadline (DefaultTimeout). Flexvolume driver calls are bounded by
	// their context only.
	Timeout time.Duration
	// LookPath finds a utility on the host (exec.LookPath).
	LookPath func(file string) (string, error)
}

// Router hands out VolumeExec instances that route each command to the
// plugin's mount pod or to the host.
type Router struct {
	finder mountpod.Finder
	pods   PodExecutor
	host   utilexec.Interface
	opts   Options
}

// NewRouter returns a Router. host runs commands on the host (for
// flexvolume drivers, pkg/util/groupexec).
func NewRouter(finder mountpod.Finder, pods PodExecutor, host utilexec.Interface, opts Options) *Router {
	registerMetrics()
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.LookPath == nil {
		opts.LookPath = host.LookPath
	}
	return &Router{finder: finder, pods: pods, host: host, opts: opts}
}

// UtilityNotFoundError: neither a mount pod nor the host can run a
// utility. It unwraps to utilexec.ErrExecutableNotFound and to the
// *mountpod.NoPodError, whose message names the missing pod's label.
type UtilityNotFoundError struct {
	Utility string
	NoPod   *mountpod.NoPodError
}

func (e *UtilityNotFoundError) Error() string {
	return fmt.Sprintf("%s is not installed on the host, and %v", e.Utility, e.NoPod)
}

func (e *UtilityNotFoundError) Unwrap() []error {
	return []error{utilexec.ErrExecutableNotFound, e.NoPod}
}

// ForPlugin returns the VolumeExec of plugin: every command runs in the pod
// that serves plugin, else on the host if the host has it.
func (r *Router) ForPlugin(plugin string) utilexec.Interface {
	return &pluginExec{r: r, plugin: plugin}
}

type pluginExec struct {
	r      *Router
	plugin string
}

func (p *pluginExec) Command(cmd string, args ...string) utilexec.Cmd {
	return p.CommandContext(context.Background(), cmd, args...)
}

func (p *pluginExec) CommandContext(ctx context.Context, cmd string, args ...string) utilexec.Cmd {
	t, err := p.r.finder.Find(p.plugin)
	if err == nil {
		return p.r.podCommand(ctx, p.plugin, t, append([]string{cmd}, args...), p.r.opts.Timeout)
	}
	var noPod *mountpod.NoPodError
	if !errors.As(err, &noPod) {
		return errCmd{fmt.Errorf("running %s for plugin %s: %w", cmd, p.plugin, err)}
	}
	if _, lerr := p.r.opts.LookPath(cmd); lerr != nil {
		observe("none", cmd, lerr, 0)
		return errCmd{&UtilityNotFoundError{Utility: cmd, NoPod: noPod}}
	}
	return p.r.hostCommand(ctx, cmd, cmd, args)
}

// LookPath reports file as found when a pod serves the plugin (the pod's
// own PATH resolves it), else looks on the host.
func (p *pluginExec) LookPath(file string) (string, error) {
	_, err := p.r.finder.Find(p.plugin)
	if err == nil {
		return file, nil
	}
	var noPod *mountpod.NoPodError
	if !errors.As(err, &noPod) {
		return "", err
	}
	path, lerr := p.r.opts.LookPath(file)
	if lerr != nil {
		return "", &UtilityNotFoundError{Utility: file, NoPod: noPod}
	}
	return path, nil
}

// ForFlexDrivers returns the runner of flexvolume drivers. A driver
// executable <dir>/<vendor>~<driver>/<driver> runs in the pod that serves
// driver <vendor>/<driver>, at the same place under
// mountpod.FlexDriverDir, whatever dir is. Without such a pod (or before
// the pod cache has synced) it runs on the host, except under
// podDriverDirs (the placeholders of drivers that only pods have), where it
// fails as a missing executable does.
func (r *Router) ForFlexDrivers(podDriverDirs ...string) utilexec.Interface {
	return &flexExec{r: r, podDirs: podDriverDirs}
}

type flexExec struct {
	r       *Router
	podDirs []string
}

func (f *flexExec) Command(cmd string, args ...string) utilexec.Cmd {
	return f.CommandContext(context.Background(), cmd, args...)
}

func (f *flexExec) CommandContext(ctx context.Context, execPath string, args ...string) utilexec.Cmd {
	if !filepath.IsAbs(execPath) {
		// A utility, not a driver (blkid or mkfs of SafeFormatAndMount
		// given this runner): the host's, as before mount pods. Callers that
		// know the driver use ForPlugin instead.
		return f.r.hostCommand(ctx, "", execPath, args)
	}
	dirName := filepath.Base(filepath.Dir(execPath))
	drv := utilstrings.UnescapeQualifiedName(dirName)
	t, err := f.r.find(drv, flexNodeArg(args))
	if err == nil {
		inPod := path.Join(mountpod.FlexDriverDir, dirName, filepath.Base(execPath))
		// A driver call's bound is its own (ctx), as on the host.
		return f.r.podCommand(ctx, drv, t, append([]string{inPod}, args...), 0)
	}
	var noPod *mountpod.NoPodError
	podsOnly := f.servedByPodsOnly(execPath)
	switch {
	case errors.As(err, &noPod) && podsOnly:
		return errCmd{fmt.Errorf("flexvolume driver %s is served by mount pods only, and %w: %w", drv, noPod, fs.ErrNotExist)}
	case errors.As(err, &noPod), errors.Is(err, mountpod.ErrNotSynced) && !podsOnly:
		// A driver installed on the host runs there until a pod serves it,
		// also while the pod cache fills after a restart.
		return f.r.hostCommand(ctx, drv, execPath, args)
	}
	return errCmd{fmt.Errorf("running flexvolume driver %s: %w", drv, err)}
}

func (f *flexExec) servedByPodsOnly(execPath string) bool {
	for _, d := range f.podDirs {
		if rel, err := filepath.Rel(d, execPath); err == nil && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	return false
}

func (f *flexExec) LookPath(file string) (string, error) { return f.r.host.LookPath(file) }

// ForPlugin returns the Router's VolumeExec of plugin: the utilities a
// flexvolume driver's in-tree fallbacks need (formatting when a driver
// does not support mountdevice) run in the pod that serves the driver.
func (f *flexExec) ForPlugin(plugin string) utilexec.Interface { return f.r.ForPlugin(plugin) }

// nodePreferring is a Finder that can prefer one node's pods (a
// cluster-wide finder in the controller-manager).
type nodePreferring interface {
	FindPreferring(plugin, node string) (mountpod.Target, error)
}

func (r *Router) find(plugin, node string) (mountpod.Target, error) {
	if np, ok := r.finder.(nodePreferring); ok && node != "" {
		return np.FindPreferring(plugin, node)
	}
	return r.finder.Find(plugin)
}

// flexNodeArg returns the node a flex command is about: the last argument
// of attach, isattached and detach. The pod on that node is preferred, so
// that a driver that attaches locally runs where the volume goes.
func flexNodeArg(args []string) string {
	if len(args) < 2 {
		return ""
	}
	switch args[0] {
	case "attach", "isattached", "detach":
		return args[len(args)-1]
	}
	return ""
}

func (r *Router) podCommand(ctx context.Context, plugin string, t mountpod.Target, argv []string, timeout time.Duration) utilexec.Cmd {
	utility := path.Base(argv[0])
	klog.FromContext(ctx).V(2).Info("Running volume utility in mount pod", "utility", utility, "plugin", plugin, "pod", t.String())
	return &podCmd{ctx: ctx, exec: r.pods, target: t, argv: argv, timeout: timeout,
		observe: func(err error, took time.Duration) { observe("pod", utility, err, took) }}
}

func (r *Router) hostCommand(ctx context.Context, plugin, cmd string, args []string) utilexec.Cmd {
	klog.FromContext(ctx).V(4).Info("Running volume utility on the host", "utility", path.Base(cmd), "plugin", plugin)
	observe("host", path.Base(cmd), nil, 0)
	return r.host.CommandContext(ctx, cmd, args...)
}
