package prober

import (
	"context"
	"time"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// Init results that arrive while other inits are still running are applied
// at once but published together: when the last of them finishes, when a
// consumer's Settling.Wait ends, or SettleWait after the first unpublished
// one, whichever comes first. Publishing copies every entry, and each
// consumer compares every entry of a new Snapshot, so one publication per
// result made a start with n drivers, or n drivers updated together, cost
// O(n²).

// deferPublish records that an applied result awaits publication and arms
// the flush timer if it is not armed. Called under r.mu.
func (r *reconciler) deferPublish() {
	r.deferred.Store(true)
	if !r.flushTimer.armed {
		r.flushTimer.reset(r.opts.SettleWait)
		r.wake()
	}
}

// flushDeferred publishes the results deferPublish held back, if any. It
// takes no lock when there are none.
func (r *reconciler) flushDeferred() {
	if r.deferred.Load() {
		r.flushTimerFired()
	}
}

// flushTimerFired publishes the results deferPublish held back, if any, and
// disarms the flush timer.
func (r *reconciler) flushTimerFired() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushTimer.stop()
	if r.deferred.Load() && r.ctx.Err() == nil {
		r.publish()
	}
}

// reconcileDriver is reconcile for one driver whose init just finished
// while others still run: it starts another init if the executable
// changed meanwhile, handles the driver's removal from disk, and arms the
// retry timer after a failure. It reports whether the published state
// changes. Called under r.mu.
func (r *reconciler) reconcileDriver(ctx context.Context, name string, now time.Time) bool {
	want := r.dsw.get()
	d, ok := want.drivers[name]
	if ok && d.present && !d.keep && r.needsInit(r.asw[name], d, now) {
		r.exec.start(ctx, d, driver.New(d.execPath, r.runner, r.opts.Driver))
	}
	a := r.asw[name]
	if a == nil {
		return false
	}
	changed := false
	if want.scanned && (!ok || (!d.present && !d.keep)) {
		changed = r.gone(ctx, name, a, now)
	}
	if a := r.asw[name]; a != nil {
		if at := r.dueAt(name, a, want); !at.IsZero() && (r.timerAt.IsZero() || at.Before(r.timerAt)) {
			r.setTimer(at, now)
		}
	}
	return changed
}
