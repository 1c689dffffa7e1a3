package prober

import (
	"context"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// reportDirProblems reports each new or changed directory-level problem once
// and reports whether the set changed.
func (r *reconciler) reportDirProblems(ctx context.Context, probs map[string]string) bool {
	changed := len(probs) != len(r.dirProbs)
	for k, msg := range probs {
		if old, ok := r.dirProbs[k]; ok && old == msg {
			continue
		}
		changed = true
		r.emit(ctx, dirProblemEvent(k, msg))
	}
	if changed {
		clear(r.dirProbs)
		for k, v := range probs {
			r.dirProbs[k] = v
		}
	}
	return changed
}

// dirProblemEvent returns the Warning event for a directory-level problem.
func dirProblemEvent(key, msg string) Event {
	ev := Event{Type: EventTypeWarning, Reason: ReasonPluginDirUnavailable, Message: msg}
	switch {
	case key == problemScan:
		ev.Reason = ReasonPluginDirScanFailed
	case isDirProblemKey(key):
		ev.Reason, ev.Driver = ReasonDriverDirInvalid, strings.TrimPrefix(key, dirProblemPrefix)
	}
	return ev
}

// emit logs an event, counts it and passes it to the sink.
func (r *reconciler) emit(ctx context.Context, ev Event) {
	logger := klog.FromContext(ctx)
	if ev.Type == EventTypeWarning {
		logger.Info("Flexvolume discovery problem", "reason", ev.Reason, "driver", ev.Driver, "message", ev.Message)
	} else {
		logger.V(2).Info("Flexvolume discovery change", "reason", ev.Reason, "driver", ev.Driver, "message", ev.Message)
	}
	eventsTotal.WithLabelValues(ev.Reason).Inc()
	if r.opts.Events != nil {
		r.opts.Events.Event(ctx, ev)
	}
}

// armTimer wakes the reconciler for the next init retry or in-use check.
func (r *reconciler) armTimer(want desiredView, now time.Time) {
	var next time.Time
	for name, a := range r.asw {
		if at := r.dueAt(name, a, want); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	r.setTimer(next, now)
}

// dueAt is when the reconciler must look at a loaded driver again: its next
// init retry or in-use check; zero for none.
func (r *reconciler) dueAt(name string, a *actualDriver, want desiredView) time.Time {
	switch a.entry.State {
	case StateInitFailed:
		if d, ok := want.drivers[name]; ok && d.present && !r.exec.isRunning(name) {
			return a.retryAt
		}
	case StateRemoving:
		return a.checkAt
	}
	return time.Time{}
}

// setTimer makes the reconciler's timer fire at next (never when zero).
func (r *reconciler) setTimer(next, now time.Time) {
	if next.Equal(r.timerAt) {
		return
	}
	r.timerAt = next
	r.timer.stop()
	if !next.IsZero() {
		r.timer.reset(max(next.Sub(now), time.Millisecond))
	}
	r.wake()
}

// wake makes run look at its timers again.
func (r *reconciler) wake() {
	select {
	case r.rearm <- struct{}{}:
	default:
	}
}

// checkSynced closes synced once the drivers found by the first scan have
// all been initialised (or the plugin directory is known to be unavailable).
func (r *reconciler) checkSynced(want desiredView) {
	if r.initialDone {
		return
	}
	if _, unavailable := want.problems[problemPluginDir]; !want.scanned && !unavailable {
		return
	}
	if !r.exec.idle() {
		return
	}
	for name, d := range want.drivers {
		if a := r.asw[name]; d.present && !d.keep && (a == nil || a.fp != d.fp) {
			return
		}
	}
	r.initialDone = true
	r.syncedOnce.Do(func() { close(r.synced) })
}

// clockTimer is a clock.Timer that may be stopped.
type clockTimer struct {
	t     clock.Timer
	armed bool
}

func newClockTimer(c clock.Clock) clockTimer {
	t := c.NewTimer(time.Hour)
	t.Stop()
	return clockTimer{t: t}
}

func (c *clockTimer) C() <-chan time.Time {
	if !c.armed {
		return nil
	}
	return c.t.C()
}

func (c *clockTimer) stop() {
	if c.armed {
		c.t.Stop()
		c.armed = false
	}
}

func (c *clockTimer) reset(d time.Duration) {
	c.t.Reset(d)
	c.armed = true
}
