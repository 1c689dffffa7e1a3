package prober

import (
	"time"

	"k8s.io/utils/clock"
)

// Settling describes driver inits that are running now: a consumer asking
// for the drivers during an install may wait for them instead of seeing the
// new driver only at its next poll. Its deadline bounds that wait, counted
// from when the inits started, so each change delays consumers by at most
// Options.SettleWait in all, and a hanging driver not at all after that.
type Settling struct {
	done     chan struct{}
	deadline time.Time
	clock    clock.Clock
	// flush publishes the results applied so far.
	flush func()
}

// Wait returns when the inits have been applied and published, or at the
// deadline, whichever comes first. At the deadline, the results of the inits
// that have finished are published before it returns.
func (s *Settling) Wait() {
	d := s.deadline.Sub(s.clock.Now())
	if d > 0 {
		t := s.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-s.done:
			return
		case <-t.C():
		}
	}
	s.flush()
}

// settleStart records that inits are running, if not recorded yet. It is
// called under the reconciler's lock.
func (r *reconciler) settleStart(now time.Time) {
	if r.opts.SettleWait <= 0 || r.exec.idle() || r.settling.Load() != nil {
		return
	}
	r.settling.Store(&Settling{done: make(chan struct{}), deadline: now.Add(r.opts.SettleWait), clock: r.opts.Clock,
		flush: r.flushDeferred})
}

// settleEnd releases waiters once no init runs. It is called under the
// reconciler's lock, after publishing.
func (r *reconciler) settleEnd(force bool) {
	if !force && !r.exec.idle() {
		return
	}
	if s := r.settling.Swap(nil); s != nil {
		close(s.done)
	}
}
