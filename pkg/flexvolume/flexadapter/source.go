package flexadapter

import (
	"context"
	"sync/atomic"

	"k8s.io/kubernetes/pkg/volume"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

// Options configures a Source. InUse and Events may also be set later with
// SetInUseChecker and SetEventSink, when the components that answer them
// exist only after the VolumePluginMgr was initialised. Events that happen
// before SetEventSink are kept and replayed to the sink when it is set.
type Options struct {
	prober.Options
}

// Source discovers flexvolume drivers in one plugin directory and serves
// them to any number of VolumePluginMgrs through consumer views.
type Source struct {
	ctx    context.Context
	lib    prober.Prober
	runner utilexec.Interface
	inUse  atomic.Pointer[prober.InUseChecker]
	events eventBuffer
}

// NewSource starts watching dir; see prober.New. runner runs the drivers
// (and mkfs/fsck for the in-tree MountDevice fallback); use
// pkg/util/groupexec. Driver calls made by plugin objects are bounded by
// their own timeouts and end when ctx ends.
func NewSource(ctx context.Context, dir string, runner utilexec.Interface, opts Options) (*Source, error) {
	p := &Source{ctx: ctx, runner: runner}
	if opts.InUse != nil {
		p.SetInUseChecker(opts.InUse)
	}
	if opts.Events != nil {
		p.SetEventSink(opts.Events)
	}
	libOpts := opts.Options
	libOpts.InUse = prober.InUseFunc(p.driverInUse)
	libOpts.Events = eventSinkFunc(p.event)
	lib, err := prober.New(ctx, dir, runner, libOpts)
	if err != nil {
		return nil, err
	}
	p.lib = lib
	return p, nil
}

// NewConsumerView returns a volume.DynamicPluginProber for one
// VolumePluginMgr. Views of one Source share its watcher.
func (p *Source) NewConsumerView() volume.DynamicPluginProber {
	return newConsumerView(p)
}

// SetInUseChecker sets what decides whether a removed driver is still used
// ("can be updated but not deleted"). Until it is set, nothing is in use.
func (p *Source) SetInUseChecker(c prober.InUseChecker) { p.inUse.Store(&c) }

// SetEventSink sets where discovery events go (normally the Node's events).
// Events that happened before, such as init failures and invalid directory
// names found by the scan inside NewSource, are replayed to s first (up to a
// bound, Warnings first; see eventBuffer).
func (p *Source) SetEventSink(s prober.EventSink) { p.events.setSink(p.ctx, s) }

// Library returns the underlying prober, for status and tests.
func (p *Source) Library() prober.Prober { return p.lib }

func (p *Source) driverInUse(ctx context.Context, name string) (bool, error) {
	c := p.inUse.Load()
	if c == nil {
		return false, nil
	}
	return (*c).DriverInUse(ctx, name)
}

func (p *Source) event(ctx context.Context, ev prober.Event) { p.events.event(ctx, ev) }

type eventSinkFunc func(context.Context, prober.Event)

func (f eventSinkFunc) Event(ctx context.Context, ev prober.Event) { f(ctx, ev) }
