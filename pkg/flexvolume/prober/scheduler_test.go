package prober

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestScheduler(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	s := newScheduler(clk, time.Second)
	fired := func() bool {
		select {
		case <-s.C():
			s.fired()
			return true
		default:
			return false
		}
	}
	steps := []struct {
		name     string
		advance  time.Duration
		change   bool
		wantScan bool // scan at once
		wantFire bool // deferred scan due
	}{
		{name: "first change is scanned at once", change: true, wantScan: true},
		{name: "an install's second event too", advance: 10 * time.Millisecond, change: true, wantScan: true},
		{name: "third in the burst", advance: 10 * time.Millisecond, change: true, wantScan: true},
		{name: "fourth in the burst", advance: 10 * time.Millisecond, change: true, wantScan: true},
		{name: "a flood is deferred", advance: 10 * time.Millisecond, change: true},
		{name: "more changes are folded", advance: 300 * time.Millisecond, change: true},
		{name: "not due before a scan is allowed", advance: 500 * time.Millisecond},
		{name: "due once one is", advance: 200 * time.Millisecond, wantFire: true},
		{name: "the flood goes on: spaced by the interval", advance: 100 * time.Millisecond, change: true},
		{name: "not due yet", advance: 800 * time.Millisecond},
		{name: "due a second after the last", advance: 100 * time.Millisecond, wantFire: true},
		{name: "quiet seconds refill the bucket", advance: 5 * time.Second, change: true, wantScan: true},
		{name: "and allow a burst again", advance: 10 * time.Millisecond, change: true, wantScan: true},
	}
	for _, st := range steps {
		clk.Step(st.advance)
		if got := fired(); got != st.wantFire {
			t.Fatalf("%s: fired = %v, want %v", st.name, got, st.wantFire)
		}
		if st.wantFire {
			s.scanning()
		}
		if st.change {
			got := s.changed()
			if got != st.wantScan {
				t.Fatalf("%s: scan now = %v, want %v", st.name, got, st.wantScan)
			}
			if got {
				s.scanning()
			}
		}
	}
}
