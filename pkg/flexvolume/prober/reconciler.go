package prober

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// actualDriver is one loaded driver in the actual state of the world.
type actualDriver struct {
	entry *Entry
	// fp is the executable version entry reflects.
	fp fingerprint
	// readyCaps are the capabilities of the last version that initialised.
	readyCaps *driver.Capabilities
	retry     dirwatch.Backoff
	retryAt   time.Time // next init retry while StateInitFailed
	checkAt   time.Time // next in-use check while StateRemoving
}

// reconciler compares the desired state (what is on disk) with the actual
// state (what is loaded), starts inits through the executor, applies their
// results and publishes Snapshots.
//
// It reconciles in the goroutine that brings the change: the populator's
// after a scan (kick), the init's after it finished (onResult), and its own
// when its timer fires (retries, in-use checks). A new driver thus costs no
// goroutine hand-off but the one into its init. mu guards everything but
// cur and synced.
type reconciler struct {
	ctx         context.Context
	opts        *Options
	runner      utilexec.Interface
	dsw         *desiredState
	stats       *stats
	mu          sync.Mutex
	exec        *executor
	asw         map[string]*actualDriver
	initProbs   map[string]string // failed inits, by problem key
	dirProbs    map[string]string // directory problems already reported
	version     uint64
	cur         atomic.Pointer[Snapshot]
	settling    atomic.Pointer[Settling]
	synced      chan struct{}
	syncedOnce  sync.Once
	timer       clockTimer
	timerAt     time.Time     // when timer fires; zero when stopped
	rearm       chan struct{} // the timer changed: run must look at it again
	initialDone bool
	// deferred: applied init results are not published yet; flushTimer
	// publishes them (see deferPublish).
	deferred   atomic.Bool
	flushTimer clockTimer
}

// newReconciler returns a reconciler that stops working when ctx ends.
func newReconciler(ctx context.Context, opts *Options, runner utilexec.Interface, dsw *desiredState, st *stats) *reconciler {
	r := &reconciler{
		ctx: ctx, opts: opts, runner: runner, dsw: dsw, stats: st,
		asw:        map[string]*actualDriver{},
		initProbs:  map[string]string{},
		dirProbs:   map[string]string{},
		synced:     make(chan struct{}),
		timer:      newClockTimer(opts.Clock),
		flushTimer: newClockTimer(opts.Clock),
		rearm:      make(chan struct{}, 1),
	}
	r.exec = newExecutor(st, r.onResult)
	r.cur.Store(newSnapshot(0, map[string]*Entry{}, map[string]string{}))
	dsw.onChange = r.kick
	return r
}

// run reconciles once, then whenever the timer fires, until ctx ends.
func (r *reconciler) run(ctx context.Context) {
	defer func() {
		r.exec.wait()
		r.mu.Lock()
		r.settleEnd(true)
		r.mu.Unlock()
	}()
	r.kick()
	for {
		r.mu.Lock()
		timerC, flushC := r.timer.C(), r.flushTimer.C()
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-r.rearm:
		case <-flushC:
			r.flushTimerFired()
		case <-timerC:
			r.mu.Lock()
			r.timerAt = time.Time{}
			r.reconcile(ctx)
			r.mu.Unlock()
		}
	}
}

// kick reconciles after a change of the desired state.
func (r *reconciler) kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() == nil {
		r.reconcile(r.ctx)
	}
}

// onResult applies an init result, publishes, and reconciles: the desired
// state may have changed while the init ran. While other inits are still
// running, it only looks at this result's driver and defers the publication
// (see deferPublish), so that a batch of n inits costs O(n), not n full
// passes over every driver.
func (r *reconciler) onResult(res initResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exec.finished(res.want.name)
	if r.ctx.Err() != nil {
		return
	}
	changed := r.apply(r.ctx, res)
	if !r.exec.idle() && r.opts.SettleWait > 0 {
		now := r.opts.Clock.Now()
		if r.reconcileDriver(r.ctx, res.want.name, now) || changed {
			r.deferPublish()
		}
		return
	}
	if changed {
		r.publish()
	}
	r.reconcile(r.ctx)
}

// reconcile starts the inits the desired state needs, handles drivers that
// left the disk, and publishes when something changed.
func (r *reconciler) reconcile(ctx context.Context) {
	want := r.dsw.get()
	now := r.opts.Clock.Now()
	changed := r.reportDirProblems(ctx, want.problems)
	for name, d := range want.drivers {
		if d.present && !d.keep && r.needsInit(r.asw[name], d, now) {
			r.exec.start(ctx, d, driver.New(d.execPath, r.runner, r.opts.Driver))
		}
	}
	if want.scanned {
		for name, a := range r.asw {
			if d, ok := want.drivers[name]; ok && (d.present || d.keep) {
				continue
			}
			changed = r.gone(ctx, name, a, now) || changed
		}
	}
	if changed || r.deferred.Load() {
		r.publish()
	}
	r.settleStart(now)
	r.settleEnd(false)
	r.armTimer(want, now)
	r.checkSynced(want)
}

func (r *reconciler) needsInit(a *actualDriver, d desiredDriver, now time.Time) bool {
	switch {
	case r.exec.isRunning(d.name):
		return false
	case a == nil, a.fp != d.fp, a.entry.State == StateRemoving:
		return true
	case a.entry.State == StateInitFailed:
		return !now.Before(a.retryAt)
	}
	return false
}

// apply records an init result and reports whether the published state
// changes. A result for an executable that is no longer the one on disk is
// dropped: reconcile starts an init for the new one.
func (r *reconciler) apply(ctx context.Context, res initResult) bool {
	d, ok := r.dsw.get().drivers[res.want.name]
	if !ok || !d.present || d.fp != res.want.fp {
		return false
	}
	if res.err == nil {
		r.loaded(ctx, res)
		return true
	}
	return r.failed(ctx, res)
}

func (r *reconciler) loaded(ctx context.Context, res initResult) {
	d := res.want
	caps := res.caps
	r.asw[d.name] = &actualDriver{
		entry: &Entry{
			Name: d.name, DirName: d.dirName, ExecPath: d.execPath, State: StateReady,
			Capabilities: caps, Driver: res.drv, Version: r.nextVersion(),
		},
		fp:        d.fp,
		readyCaps: &caps,
	}
	delete(r.initProbs, initProblemPrefix+d.name)
	r.emit(ctx, Event{Type: EventTypeNormal, Reason: ReasonDriverLoaded, Driver: d.name,
		Message: fmt.Sprintf("Flexvolume driver %s loaded from %s (attach: %t)", d.name, d.execPath, caps.Attach)})
}

// failed records a failed init. The previous version is not kept for new
// work: the entry becomes StateInitFailed. The failure is reported once per
// executable version; retries back off and are only logged.
func (r *reconciler) failed(ctx context.Context, res initResult) bool {
	d := res.want
	a := r.asw[d.name]
	if a == nil {
		a = &actualDriver{}
		r.asw[d.name] = a
	}
	first := a.entry == nil || a.fp != d.fp || a.entry.State != StateInitFailed
	if first {
		a.retry = dirwatch.Backoff{Min: r.opts.InitRetryMin, Max: r.opts.InitRetryMax}
	}
	a.retryAt = r.opts.Clock.Now().Add(a.retry.Next())
	// A retry that fails with the same report as the last attempt changes
	// nothing that is published: the snapshot's problem text is the report.
	key, msg := initProblemPrefix+d.name, res.err.Error()
	unchanged := !first && r.initProbs[key] == msg
	r.initProbs[key] = msg
	if unchanged {
		klog.FromContext(ctx).V(2).Info("Flexvolume driver init retry failed", "driver", d.name, "err", res.err)
		return false
	}
	caps := driver.DefaultCapabilities()
	caps.Attach = false
	if a.readyCaps != nil {
		caps = *a.readyCaps
	}
	a.fp = d.fp
	a.entry = &Entry{
		Name: d.name, DirName: d.dirName, ExecPath: d.execPath, State: StateInitFailed,
		Capabilities: caps, Driver: res.drv, Err: res.err, Version: r.nextVersion(),
	}
	if first {
		initFailuresTotal.WithLabelValues(d.name).Inc()
		r.emit(ctx, Event{Type: EventTypeWarning, Reason: ReasonDriverInitFailed, Driver: d.name,
			Message: fmt.Sprintf("Flexvolume driver %s is not used for new volumes: %v", d.name, res.err)})
	}
	return true
}

// gone handles a loaded driver that is no longer on disk: it is unloaded, or
// kept in StateRemoving while volumes use it ("can be updated but not
// deleted"). It reports whether the published state changes.
func (r *reconciler) gone(ctx context.Context, name string, a *actualDriver, now time.Time) bool {
	if a.entry.State == StateRemoving && now.Before(a.checkAt) {
		return false
	}
	if r.inUse(ctx, name) {
		a.checkAt = now.Add(r.opts.InUseRecheckInterval)
		if a.entry.State == StateRemoving {
			return false
		}
		e := *a.entry
		e.State, e.Version = StateRemoving, r.nextVersion()
		e.Err = fmt.Errorf("flexvolume driver %s was removed from disk while volumes use it; it is kept only to tear them down", name)
		if a.readyCaps != nil {
			e.Capabilities = *a.readyCaps
		}
		a.entry = &e
		r.emit(ctx, Event{Type: EventTypeWarning, Reason: ReasonDriverRemovalDeferred, Driver: name,
			Message: fmt.Sprintf("Flexvolume driver %s removed while volumes use it: it stays loaded for their teardown and is unloaded when they are gone", name)})
		return true
	}
	delete(r.asw, name)
	delete(r.initProbs, initProblemPrefix+name)
	r.emit(ctx, Event{Type: EventTypeNormal, Reason: ReasonDriverRemoved, Driver: name,
		Message: fmt.Sprintf("Flexvolume driver %s unloaded", name)})
	return true
}

// inUse asks the InUseChecker; an error counts as in use.
func (r *reconciler) inUse(ctx context.Context, name string) bool {
	if r.opts.InUse == nil {
		return false
	}
	used, err := r.opts.InUse.DriverInUse(ctx, name)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Checking whether a flexvolume driver is in use failed; assuming it is", "driver", name)
		return true
	}
	return used
}

func (r *reconciler) nextVersion() uint64 {
	r.version++
	return r.version
}

// publish stores a new Snapshot of the actual state.
func (r *reconciler) publish() {
	entries := make(map[string]*Entry, len(r.asw))
	counts := map[State]int{}
	for name, a := range r.asw {
		entries[name] = a.entry
		counts[a.entry.State]++
	}
	problems := maps.Clone(r.dirProbs)
	maps.Copy(problems, r.initProbs)
	r.deferred.Store(false)
	r.flushTimer.stop()
	prev := r.cur.Load()
	r.cur.Store(newSnapshot(prev.Generation+1, entries, problems))
	close(prev.next)
	for _, s := range []State{StateReady, StateInitFailed, StateRemoving} {
		driversGauge.WithLabelValues(stateLabel(s)).Set(float64(counts[s]))
	}
}
