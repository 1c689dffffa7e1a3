package podexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"time"

	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/mountpod"
)

// Finder is what a Router needs of pkg/mountpod: the pod that serves
// plugin, preferring the pods on node when node is set and the finder sees
// several nodes (the controller-manager's). *mountpod.InformerFinder is one.
type Finder interface {
	FindPreferring(plugin, node string) (mountpod.Target, error)
}

// Request is one operation to route: what runs, for which plugin.
type Request struct {
	// Plugin is the volume plugin (or flexvolume driver) the operation is for.
	Plugin string
	// Executable is what runs: a utility looked up in PATH (mount, mkfs.ext4)
	// or, with Driver, a flexvolume driver's path on the host.
	Executable string
	// Driver marks a flexvolume driver call: in a pod the driver runs at
	// the same place under mountpod.FlexDriverDir, bounded by its context
	// only.
	Driver bool
	// PodsOnly marks a driver that only mount pods have (a placeholder
	// published by pkg/mountpod/flexdrivers): never run on the host.
	PodsOnly bool
	// PreferNode, when set, is the node whose pods are preferred (the node
	// a flex attach, isattached or detach is about).
	PreferNode string
}

// Route is where one operation runs: the mount pod the Router resolved, or
// the host. Every command run through it goes there; a Route never looks
// the pod up again, so a pod that goes away meanwhile makes its commands
// fail instead of moving them to the host.
type Route struct {
	r       *Router
	plugin  string
	pod     *mountpod.Target
	noPod   error // why the host: the finder's answer
	driver  bool
	timeout time.Duration
}

var _ utilexec.Interface = &Route{}

// Pod returns the mount pod the route runs in, and false for the host.
func (rt *Route) Pod() (mountpod.Target, bool) {
	if rt.pod == nil {
		return mountpod.Target{}, false
	}
	return *rt.pod, true
}

// Plugin returns the plugin the route was resolved for.
func (rt *Route) Plugin() string { return rt.plugin }

// String names where the route runs.
func (rt *Route) String() string {
	if rt.pod == nil {
		return "the host"
	}
	return "mount pod " + rt.pod.String()
}

// Command runs cmd where the route goes.
func (rt *Route) Command(cmd string, args ...string) utilexec.Cmd {
	return rt.CommandContext(context.Background(), cmd, args...)
}

// CommandContext runs cmd where the route goes. A driver path is mapped to
// its place under mountpod.FlexDriverDir in the pod. On the host, a
// utility the host lacks fails with a *UtilityNotFoundError that names the
// label of the missing pod.
func (rt *Route) CommandContext(ctx context.Context, cmd string, args ...string) utilexec.Cmd {
	if rt.pod == nil {
		if _, err := rt.r.opts.LookPath(cmd); err != nil && !rt.driver {
			observe("none", path.Base(cmd), err, 0)
			return errCmd{&UtilityNotFoundError{Utility: cmd, NoPod: rt.noPod}}
		}
		return rt.r.hostCommand(ctx, rt.plugin, cmd, args)
	}
	if rt.driver {
		cmd = path.Join(mountpod.FlexDriverDir, filepath.Base(filepath.Dir(cmd)), filepath.Base(cmd))
	}
	return rt.r.podCommand(ctx, rt.plugin, *rt.pod, append([]string{cmd}, args...), rt.timeout)
}

// LookPath reports file as found in a pod (the pod's own PATH resolves
// it), and looks on the host for the host.
func (rt *Route) LookPath(file string) (string, error) {
	if rt.pod != nil {
		return file, nil
	}
	return rt.r.opts.LookPath(file)
}

type routeKey struct{}

// WithRoute returns ctx carrying rt: flexvolume driver calls of rt's
// plugin made with it (ForFlexDrivers) run where rt does instead of
// resolving again, so that a driver's mount and the check of what it
// mounted (pkg/mountpod/mounter's PodOperation) are one operation.
func WithRoute(ctx context.Context, rt *Route) context.Context {
	return context.WithValue(ctx, routeKey{}, rt)
}

// pinnedDriver returns the route of a driver call whose ctx carries a
// Route of the same plugin, with the rule's host checks, or nil.
func (r *Router) pinnedDriver(ctx context.Context, req Request) (*Route, error) {
	pin, _ := ctx.Value(routeKey{}).(*Route)
	if pin == nil || pin.r != r || pin.plugin != req.Plugin {
		return nil, nil
	}
	rt := &Route{r: r, plugin: req.Plugin, pod: pin.pod, noPod: pin.noPod, driver: true}
	switch {
	case rt.pod != nil:
		return rt, nil
	case req.PodsOnly:
		return nil, &UtilityNotFoundError{Utility: req.Plugin, NoPod: pin.noPod, PodsOnly: true}
	}
	if _, err := r.opts.LookPath(req.Executable); err != nil {
		return nil, &UtilityNotFoundError{Utility: req.Executable, NoPod: pin.noPod}
	}
	return rt, nil
}

// UtilityNotFoundError: neither a mount pod nor the host can run a
// utility. It unwraps to utilexec.ErrExecutableNotFound and to the reason
// no pod runs it: the *mountpod.NoPodError, whose message names the label
// the missing pod should carry, or mountpod.ErrNotSynced. A driver only
// pods have also unwraps to fs.ErrNotExist.
type UtilityNotFoundError struct {
	Utility  string
	NoPod    error
	PodsOnly bool
}

func (e *UtilityNotFoundError) Error() string {
	if e.PodsOnly {
		return fmt.Sprintf("flexvolume driver %s is served by mount pods only, and %v", e.Utility, e.NoPod)
	}
	return fmt.Sprintf("%s is not installed on the host, and %v", e.Utility, e.NoPod)
}

func (e *UtilityNotFoundError) Unwrap() []error {
	if e.PodsOnly {
		return []error{utilexec.ErrExecutableNotFound, e.NoPod, fs.ErrNotExist}
	}
	return []error{utilexec.ErrExecutableNotFound, e.NoPod}
}

// Resolve decides where one operation runs, with one lookup of the pod
// cache. The rule (pkg/mountpod/README.md, "Pod or host"):
//
//  1. a pod serves the plugin: that pod;
//  2. no pod serves it (*mountpod.NoPodError, also when mount pods are
//     disabled), or the pod cache has not synced and the operation is a
//     driver installed on the host: the host, when the host has the
//     executable and it is not a driver only pods have;
//  3. anything else fails: no pod and no host executable
//     (*UtilityNotFoundError), the cache not synced (mountpod.ErrNotSynced:
//     a utility is not guessed to be the host's), or the pod's container
//     not running.
func (r *Router) Resolve(req Request) (*Route, error) {
	rt := &Route{r: r, plugin: req.Plugin, driver: req.Driver, timeout: r.opts.Timeout}
	if req.Driver {
		rt.timeout = 0
	}
	t, err := r.finder.FindPreferring(req.Plugin, req.PreferNode)
	if err == nil {
		rt.pod = &t
		return rt, nil
	}
	var noPod *mountpod.NoPodError
	hostDriver := req.Driver && !req.PodsOnly
	if !errors.As(err, &noPod) && !(hostDriver && errors.Is(err, mountpod.ErrNotSynced)) {
		return nil, fmt.Errorf("routing %s of plugin %s: %w", path.Base(req.Executable), req.Plugin, err)
	}
	if req.PodsOnly {
		return nil, &UtilityNotFoundError{Utility: req.Plugin, NoPod: err, PodsOnly: true}
	}
	if _, lerr := r.opts.LookPath(req.Executable); lerr != nil {
		observe("none", path.Base(req.Executable), lerr, 0)
		return nil, &UtilityNotFoundError{Utility: req.Executable, NoPod: err}
	}
	rt.noPod = err
	return rt, nil
}
