package prober

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// populator watches the plugin directory and keeps the desired state of the
// world up to date with rate-limited scans. The watching itself (watches on
// the driver directories, symlinks, overflows, the plugin directory removed
// or not creatable) is dirwatch's; what an event means and when to scan is
// decided here. All its fields are owned by its goroutine (after start).
type populator struct {
	root  string
	opts  *Options
	dsw   *desiredState
	stats *stats
	sched *scheduler
	w     dirwatch.Watcher
	names nameCache
	// prev is the previous scan's result; its maps are shared with the
	// desired state and never modified. Until the next scan, dirty names
	// the driver directories that had events, and full says every driver
	// must be looked at again (watch errors, overflow, a new plugin
	// directory).
	prev  scanResult
	dirty map[string]bool
	full  bool
	links bool // the last scan found symlinked driver directories
	ready bool // the plugin directory exists and is watched
}

func newPopulator(root string, opts *Options, dsw *desiredState, st *stats) (*populator, error) {
	w, err := opts.newDirWatcher(root, dirwatch.Options{
		MaxDepth:       1, // nothing below <vendor>~<driver>/ can change a driver
		FollowSymlinks: true,
		CreateRoot:     true,
		RootPerm:       0o755,
		RetryMin:       opts.DirRetryMin,
		RetryMax:       opts.DirRetryMax,
		Metrics:        &watchMetrics{stats: st},
		Clock:          opts.Clock,
	})
	if err != nil {
		return nil, err
	}
	return &populator{
		root: root, opts: opts, dsw: dsw, stats: st, w: w,
		sched: newScheduler(opts.Clock, opts.MinScanInterval),
		names: nameCache{},
		dirty: map[string]bool{},
		full:  true,
	}, nil
}

// watchMetrics maps the watcher's counts to the prober's metrics.
type watchMetrics struct {
	dirwatch.NoMetrics
	stats *stats
}

func (m *watchMetrics) Overflowed() {
	m.stats.overflows.Add(1)
	overflowsTotal.Inc()
}

func (m *watchMetrics) RootAvailable(ok bool) {
	if ok {
		dirUnavailable.Set(0)
	} else {
		dirUnavailable.Set(1)
	}
}

// start starts watching. Its first event makes the first scan, or reports
// the plugin directory unavailable; failures are retried by the watcher.
func (p *populator) start(ctx context.Context) {
	_ = p.w.Start(ctx) // the failure is also the first event
}

// run is the populator's loop.
func (p *populator) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-p.w.Events():
			if !ok {
				return
			}
			if p.opts.eventHook != nil {
				p.opts.eventHook(ev)
			}
			p.onEvent(ctx, ev)
		case <-p.sched.C():
			p.sched.fired()
			p.scan(ctx)
		}
	}
}

// onEvent handles one event of the watcher.
func (p *populator) onEvent(ctx context.Context, ev dirwatch.Event) {
	switch ev.Op {
	case dirwatch.Rescan:
		p.onRescan(ctx, ev)
	case dirwatch.RootUnavailable:
		p.dirUnavailable(ctx, ev)
	case dirwatch.Unwatchable:
		klog.FromContext(ctx).Info("Cannot watch flexvolume driver directory; its changes are seen at the next scan",
			"path", ev.Path, "err", ev.Err)
	default:
		p.onChange(ctx, ev)
	}
}

// onChange handles a change on disk.
func (p *populator) onChange(ctx context.Context, ev dirwatch.Event) {
	rel, ok := relPath(p.root, ev.Path)
	if !ok || hasDotComponent(rel) {
		return
	}
	klog.FromContext(ctx).V(6).Info("Flexvolume plugin directory event", "path", ev.Path, "op", ev.Op.String())
	if rel == "." && ev.Op.Gone() {
		p.dirLost(ctx)
		return
	}
	if rel == "." {
		p.full = true
	} else {
		p.dirty[firstComponent(rel)] = true
	}
	p.changed(ctx)
}

// onRescan handles events that may have been lost, and the plugin
// directory being watched (again): everything is scanned.
func (p *populator) onRescan(ctx context.Context, ev dirwatch.Event) {
	logger := klog.FromContext(ctx)
	switch ev.Reason {
	case dirwatch.ReasonOverflow:
		logger.Info("Flexvolume plugin directory watch overflowed, rescanning", "dir", p.root)
	case dirwatch.ReasonWatchError:
		logger.Error(ev.Err, "Flexvolume plugin directory watch error, rescanning", "dir", p.root)
	case dirwatch.ReasonStarted, dirwatch.ReasonRootRecovered, dirwatch.ReasonRestarted:
		p.ready = true
		p.dsw.setProblem(problemPluginDir, "")
		logger.V(2).Info("Watching flexvolume plugin directory", "dir", p.root)
	}
	p.full = true
	p.changed(ctx)
}

// changed asks for a scan, now or at the end of the current interval.
func (p *populator) changed(ctx context.Context) {
	if p.sched.changed() {
		p.scan(ctx)
	}
}

// scan reads the plugin directory into the desired state. On failure the
// desired state, and so the loaded drivers, stay as they were.
func (p *populator) scan(ctx context.Context) {
	p.sched.scanning()
	if !p.ready {
		return // the watcher's Rescan brings a scan once the directory is back
	}
	p.stats.scans.Add(1)
	klog.FromContext(ctx).V(4).Info("Scanning flexvolume plugin directory", "dir", p.root, "full", p.full, "dirty", len(p.dirty))
	scansTotal.Inc()
	res, err := p.read()
	if errors.Is(err, os.ErrNotExist) {
		p.dirLost(ctx)
		p.w.Resync() // the watcher finds it gone, and recreates it
		return
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Scanning flexvolume plugin directory failed, keeping the loaded drivers", "dir", p.root)
		p.dsw.setProblem(problemScan, "scanning "+p.root+": "+err.Error())
		return
	}
	p.dsw.setScan(res.drivers, res.problems)
	p.prev = res
	clear(p.dirty)
	p.full = false
	p.links = res.links
}

// read scans the plugin directory: only the driver directories that had
// events when that is enough, everything otherwise.
func (p *populator) read() (scanResult, error) {
	if !p.full && !p.links && p.prev.drivers != nil {
		if res, ok := rescanDirs(p.root, p.prev, p.dirty, p.names); ok {
			return res, nil
		}
	}
	return scanDir(p.root, p.names, p.reuse)
}

// reuse returns the last scan's result for a driver directory that has had
// no event since and is watched; anything else is looked at again.
func (p *populator) reuse(dirName string) (desiredDriver, bool) {
	if p.full || p.links || p.dirty[dirName] {
		return desiredDriver{}, false
	}
	dn, err := p.names.parse(dirName)
	if err != nil {
		return desiredDriver{}, false
	}
	d, ok := p.prev.drivers[dn.PluginName()]
	if !ok || d.keep || d.dirName != dirName {
		return desiredDriver{}, false
	}
	if !p.w.Watching(filepath.Join(p.root, dirName)) {
		return desiredDriver{}, false
	}
	return d, true
}

// dirUnavailable reports that the plugin directory cannot be created or
// watched; the watcher retries with backoff.
func (p *populator) dirUnavailable(ctx context.Context, ev dirwatch.Event) {
	klog.FromContext(ctx).Info("Flexvolume plugin directory unavailable, retrying", "dir", p.root, "err", ev.Err,
		"retryIn", ev.RetryIn)
	p.ready = false
	p.dsw.setProblem(problemPluginDir, describeDirError(p.root, ev.Err))
}

// dirLost handles the removal of the plugin directory. The watcher
// recreates it, as the design asks, and a Rescan follows.
func (p *populator) dirLost(ctx context.Context) {
	if p.ready {
		klog.FromContext(ctx).Info("Flexvolume plugin directory removed, recreating it", "dir", p.root)
	}
	p.ready = false
}
