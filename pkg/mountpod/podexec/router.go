package podexec

import (
	"context"
	"fmt"
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

// Router resolves, once per operation, whether it runs in the plugin's
// mount pod or on the host (Resolve), and hands out VolumeExec instances
// that do so for each command.
type Router struct {
	finder Finder
	pods   PodExecutor
	host   utilexec.Interface
	opts   Options
}

// NewRouter returns a Router. host runs commands on the host (for
// flexvolume drivers, pkg/util/groupexec).
func NewRouter(finder Finder, pods PodExecutor, host utilexec.Interface, opts Options) *Router {
	registerMetrics()
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.LookPath == nil {
		opts.LookPath = host.LookPath
	}
	return &Router{finder: finder, pods: pods, host: host, opts: opts}
}

// ForPlugin returns the VolumeExec of plugin: each command is an operation
// of its own, resolved once (Resolve) and run there.
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
	rt, err := p.r.Resolve(Request{Plugin: p.plugin, Executable: cmd})
	if err != nil {
		return errCmd{err}
	}
	return rt.CommandContext(ctx, cmd, args...)
}

// LookPath reports file as found when a pod serves the plugin (the pod's
// own PATH resolves it), else looks on the host.
func (p *pluginExec) LookPath(file string) (string, error) {
	rt, err := p.r.Resolve(Request{Plugin: p.plugin, Executable: file})
	if err != nil {
		return "", err
	}
	return rt.LookPath(file)
}

// ForFlexDrivers returns the runner of flexvolume drivers. A driver
// executable <dir>/<vendor>~<driver>/<driver> runs in the pod that serves
// driver <vendor>/<driver>, at the same place under
// mountpod.FlexDriverDir, whatever dir is; each call is resolved once
// (Resolve), or runs on the Route its ctx carries (WithRoute). Drivers
// under podDriverDirs (the placeholders of drivers that
// only pods have) never run on the host.
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
	drv := utilstrings.UnescapeQualifiedName(filepath.Base(filepath.Dir(execPath)))
	req := Request{Plugin: drv, Executable: execPath, Driver: true,
		PodsOnly: f.servedByPodsOnly(execPath), PreferNode: flexNodeArg(args)}
	rt, err := f.r.pinnedDriver(ctx, req)
	if rt == nil && err == nil {
		rt, err = f.r.Resolve(req)
	}
	if err != nil {
		return errCmd{fmt.Errorf("running flexvolume driver %s: %w", drv, err)}
	}
	return rt.CommandContext(ctx, execPath, args...)
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
