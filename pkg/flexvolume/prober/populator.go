package prober

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// populator watches the plugin directory and keeps the desired state of the
// world up to date with rate-limited scans. All its fields are owned by its
// goroutine (after start).
type populator struct {
	root    string
	opts    *Options
	dsw     *desiredState
	stats   *stats
	sched   *scheduler
	w       fsWatcher
	watched map[string]dirID // driver directories with a watch
	names   nameCache
	// prev is the previous scan's result; its maps are shared with the
	// desired state and never modified. Until the next scan, dirty names
	// the driver directories that had events, and full says every driver
	// must be looked at again (watch errors, overflow, a new plugin
	// directory).
	prev    scanResult
	dirty   map[string]bool
	full    bool
	links   bool // the last scan found symlinked driver directories
	ready   bool // the plugin directory exists and is watched
	retry   clock.Timer
	retryOn bool
	dirBack backoff
}

func newPopulator(root string, opts *Options, dsw *desiredState, st *stats) *populator {
	t := opts.Clock.NewTimer(opts.DirRetryMin)
	t.Stop()
	return &populator{
		root: root, opts: opts, dsw: dsw, stats: st,
		sched:   newScheduler(opts.Clock, opts.MinScanInterval),
		watched: map[string]dirID{},
		names:   nameCache{},
		dirty:   map[string]bool{},
		full:    true,
		retry:   t,
		dirBack: backoff{min: opts.DirRetryMin, max: opts.DirRetryMax},
	}
}

// start makes the directory and its watch, and scans once. Failures are
// retried by run.
func (p *populator) start(ctx context.Context) {
	p.ensureDir(ctx)
}

// run is the populator's loop.
func (p *populator) run(ctx context.Context) {
	defer p.closeWatcher()
	for {
		var events <-chan fsnotify.Event
		var errs <-chan error
		if p.w != nil {
			events, errs = p.w.Events(), p.w.Errors()
		}
		var retryC <-chan time.Time
		if p.retryOn {
			retryC = p.retry.C()
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				p.watcherLost(ctx, errors.New("fsnotify event channel closed"))
				continue
			}
			if p.opts.eventHook != nil {
				p.opts.eventHook(ev)
			}
			p.onEvent(ctx, ev)
		case err, ok := <-errs:
			if !ok {
				p.watcherLost(ctx, errors.New("fsnotify error channel closed"))
				continue
			}
			p.onError(ctx, err)
		case <-p.sched.C():
			p.sched.fired()
			p.scan(ctx)
		case <-retryC:
			p.retryOn = false
			p.ensureDir(ctx)
		}
	}
}

// onEvent handles one fsnotify event.
func (p *populator) onEvent(ctx context.Context, ev fsnotify.Event) {
	rel, ok := relPath(p.root, ev.Name)
	if !ok || hasDotComponent(rel) {
		return
	}
	klog.FromContext(ctx).V(6).Info("Flexvolume plugin directory event", "path", ev.Name, "op", ev.Op.String())
	gone := ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	switch {
	case rel == "." && gone:
		p.dirLost(ctx)
		return
	case depth(rel) == 1 && gone:
		// The watch of a removed directory is gone with it, and a new
		// directory may reuse the inode: make the next scan add it again.
		delete(p.watched, ev.Name)
	}
	if rel == "." {
		p.full = true
	} else {
		p.dirty[firstComponent(rel)] = true
	}
	p.changed(ctx)
}

// onError handles a watcher error. Any error may mean lost events, so the
// next scan re-reads everything and re-adds every watch.
func (p *populator) onError(ctx context.Context, err error) {
	logger := klog.FromContext(ctx)
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		p.stats.overflows.Add(1)
		overflowsTotal.Inc()
		logger.Info("Flexvolume plugin directory watch overflowed, rescanning", "dir", p.root)
	} else {
		logger.Error(err, "Flexvolume plugin directory watch error, rescanning", "dir", p.root)
	}
	clear(p.watched)
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
		return // ensureDir scans once the directory is back
	}
	p.stats.scans.Add(1)
	klog.FromContext(ctx).V(4).Info("Scanning flexvolume plugin directory", "dir", p.root, "full", p.full, "dirty", len(p.dirty))
	scansTotal.Inc()
	res, err := p.read(ctx)
	if errors.Is(err, os.ErrNotExist) {
		p.dirLost(ctx)
		return
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Scanning flexvolume plugin directory failed, keeping the loaded drivers", "dir", p.root)
		p.dsw.setProblem(problemScan, "scanning "+p.root+": "+err.Error())
		return
	}
	for path := range p.watched {
		if _, ok := res.dirs[path]; !ok {
			_ = p.w.Remove(path)
			delete(p.watched, path)
		}
	}
	p.dsw.setScan(res.drivers, res.problems)
	p.prev = res
	clear(p.dirty)
	p.full = false
	p.links = res.links
}

// read scans the plugin directory: only the driver directories that had
// events when that is enough, everything otherwise.
func (p *populator) read(ctx context.Context) (scanResult, error) {
	if !p.full && !p.links && p.prev.drivers != nil {
		if res, ok := rescanDirs(p.root, p.prev, p.dirty, p.names, p.watchDir(ctx)); ok {
			return res, nil
		}
	}
	return scanDir(p.root, p.names, p.reuse, p.watchDir(ctx))
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
	if _, watched := p.watched[filepath.Join(p.root, dirName)]; !watched {
		return desiredDriver{}, false
	}
	return d, true
}

// watchDir returns the function scanDir calls for each driver directory.
func (p *populator) watchDir(ctx context.Context) func(string, dirID) {
	return func(path string, id dirID) {
		old, ok := p.watched[path]
		if ok && old == id {
			return
		}
		if ok {
			_ = p.w.Remove(path) // a retargeted symlink
		}
		if err := p.w.Add(path); err != nil {
			klog.FromContext(ctx).Info("Cannot watch flexvolume driver directory; its changes are seen at the next scan",
				"path", path, "err", err)
			return
		}
		p.watched[path] = id
	}
}

// ensureDir (re)creates the plugin directory and its watch, then scans. On
// failure it retries with backoff.
func (p *populator) ensureDir(ctx context.Context) {
	logger := klog.FromContext(ctx)
	err := p.makeDir()
	if err != nil {
		delay := p.dirBack.next()
		logger.Info("Flexvolume plugin directory unavailable, retrying", "dir", p.root, "err", err, "retryIn", delay)
		p.dsw.setProblem(problemPluginDir, describeDirError(p.root, err))
		dirUnavailable.Set(1)
		p.retry.Reset(delay)
		p.retryOn = true
		return
	}
	p.ready = true
	p.full = true
	p.dirBack.reset()
	p.dsw.setProblem(problemPluginDir, "")
	dirUnavailable.Set(0)
	logger.V(2).Info("Watching flexvolume plugin directory", "dir", p.root)
	p.changed(ctx)
}

func (p *populator) makeDir() error {
	if p.w == nil {
		w, err := p.opts.newWatcher()
		if err != nil {
			return err
		}
		p.w = w
	}
	if err := os.MkdirAll(p.root, 0o755); err != nil {
		return err
	}
	return p.w.Add(p.root)
}

// dirLost handles the removal of the plugin directory: every watch went with
// it. The directory is recreated, as the design asks, and scanned.
func (p *populator) dirLost(ctx context.Context) {
	klog.FromContext(ctx).Info("Flexvolume plugin directory removed, recreating it", "dir", p.root)
	p.ready = false
	for path := range p.watched {
		_ = p.w.Remove(path)
	}
	clear(p.watched)
	_ = p.w.Remove(p.root)
	p.ensureDir(ctx)
}

// watcherLost replaces a watcher that stopped working.
func (p *populator) watcherLost(ctx context.Context, err error) {
	klog.FromContext(ctx).Error(err, "Flexvolume plugin directory watcher stopped, restarting it", "dir", p.root)
	p.closeWatcher()
	p.ready = false
	clear(p.watched)
	p.ensureDir(ctx)
}

func (p *populator) closeWatcher() {
	if p.w != nil {
		_ = p.w.Close()
		p.w = nil
	}
}
