package prober

import (
	"time"

	"k8s.io/utils/clock"
)

// scheduler spaces directory scans at least min apart without losing a
// change: the first change after a quiet interval is scanned at once, and
// every change that arrives sooner is folded into one scan at the end of the
// interval (a trailing edge). It is owned by the populator goroutine.
type scheduler struct {
	clock   clock.Clock
	min     time.Duration
	last    time.Time
	scanned bool
	pending bool
	timer   clock.Timer
}

func newScheduler(c clock.Clock, min time.Duration) *scheduler {
	t := c.NewTimer(min)
	t.Stop()
	return &scheduler{clock: c, min: min, timer: t}
}

// changed records a change and reports whether to scan now. When it returns
// false a scan is due when C fires.
func (s *scheduler) changed() bool {
	if s.pending {
		return false
	}
	now := s.clock.Now()
	if !s.scanned || now.Sub(s.last) >= s.min {
		return true
	}
	s.pending = true
	s.timer.Reset(s.last.Add(s.min).Sub(now))
	return false
}

// C fires when a deferred scan is due; nil when none is.
func (s *scheduler) C() <-chan time.Time {
	if !s.pending {
		return nil
	}
	return s.timer.C()
}

// fired acknowledges C.
func (s *scheduler) fired() { s.pending = false }

// scanning records the start of a scan, which covers every change so far.
func (s *scheduler) scanning() {
	s.last = s.clock.Now()
	s.scanned = true
	if s.pending {
		s.timer.Stop()
		s.pending = false
	}
}

// backoff is a capped exponential delay.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	switch {
	case b.cur == 0:
		b.cur = b.min
	case b.cur < b.max:
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }
