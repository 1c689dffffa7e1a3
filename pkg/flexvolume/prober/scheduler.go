package prober

import (
	"time"

	"k8s.io/utils/clock"
)

// scheduler limits directory scans with a token bucket without losing a
// change: up to scanBurst changes in a row are scanned at once (an install
// is a few events: the driver directory, then the executable renamed in),
// after that one scan per min, and every change that arrives while no scan
// is allowed is folded into one scan when the next is (a trailing edge). It
// is owned by the populator goroutine.
type scheduler struct {
	clock   clock.Clock
	min     time.Duration
	tokens  float64
	last    time.Time // when tokens was last refilled
	pending bool
	timer   clock.Timer
}

// scanBurst is how many scans may run back to back before they are spaced
// min apart.
const scanBurst = 4

func newScheduler(c clock.Clock, min time.Duration) *scheduler {
	t := c.NewTimer(min)
	t.Stop()
	return &scheduler{clock: c, min: min, timer: t, tokens: scanBurst, last: c.Now()}
}

func (s *scheduler) refill() {
	now := s.clock.Now()
	s.tokens = min(scanBurst, s.tokens+float64(now.Sub(s.last))/float64(s.min))
	s.last = now
}

// changed records a change and reports whether to scan now. When it returns
// false a scan is due when C fires.
func (s *scheduler) changed() bool {
	if s.pending {
		return false
	}
	s.refill()
	if s.tokens >= 1 {
		return true
	}
	s.pending = true
	s.timer.Reset(time.Duration((1 - s.tokens) * float64(s.min)))
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
	s.refill()
	s.tokens = max(s.tokens-1, 0)
	if s.pending {
		s.timer.Stop()
		s.pending = false
	}
}
