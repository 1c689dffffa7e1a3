package reconciler

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestSlowFailureBackoff: each slow failure waits at least as long as the
// attempt held its slot, doubling, capped at RetryMax; a replaced socket
// (other generation) starts afresh.
func TestSlowFailureBackoff(t *testing.T) {
	r := newRetries(10*time.Millisecond, 2*time.Minute)
	r.jitter = 0 // exact delays; TestSlowFailureJitter checks the spread
	if _, ok := r.slowFailure("/p", 1, 5*time.Second); ok {
		t.Fatal("slow failure recorded for a socket without a failure history")
	}
	var got []time.Duration
	for range 7 {
		r.next("/p", 1)
		d, ok := r.slowFailure("/p", 1, 5*time.Second)
		if !ok {
			t.Fatal("slow failure not recorded")
		}
		got = append(got, d)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second,
		80 * time.Second, 2 * time.Minute, 2 * time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	if !r.suspect("/p", 1) || r.suspect("/p", 2) {
		t.Error("generation 1 must be suspect, generation 2 not")
	}
	if _, ok := r.slowFailure("/p", 2, time.Second); ok {
		t.Error("slow failure recorded against another generation's history")
	}
	r.forget("/p")
	if r.suspect("/p", 1) {
		t.Error("a forgotten socket is still suspect")
	}
}

// TestRetryJitter: the default jitter keeps every delay within [d, 1.5d)
// of the exponential step and below RetryMax, and spreads sockets that
// failed together.
func TestRetryJitter(t *testing.T) {
	r := newRetries(10*time.Millisecond, 2*time.Minute)
	firsts := map[time.Duration]bool{}
	for i := range 50 {
		path := fmt.Sprintf("/p%d", i)
		step := 10 * time.Millisecond
		for range 16 {
			d := r.next(path, 1)
			if upper := min(step+step/2, 2*time.Minute); d < step || d > upper {
				t.Fatalf("delay %v for step %v: want within [%v, %v]", d, step, step, upper)
			}
			if step == 10*time.Millisecond {
				firsts[d] = true
			}
			step = min(2*step, 2*time.Minute)
		}
	}
	if len(firsts) < 10 {
		t.Errorf("50 sockets' first retries took %d distinct delays; want them spread", len(firsts))
	}
}

// TestSlowFailureJitter: sockets that stalled together (the same time held,
// the same history) retry at spread times, each within [d, 1.5d) of its
// doubling step and below RetryMax, so that they do not stall together
// again.
func TestSlowFailureJitter(t *testing.T) {
	const held = 5 * time.Second
	r := newRetries(10*time.Millisecond, 2*time.Minute)
	firsts := map[time.Duration]bool{}
	for i := range 200 {
		path := fmt.Sprintf("/mute%d", i)
		step := held
		for range 7 {
			r.next(path, 1)
			d, ok := r.slowFailure(path, 1, held)
			if !ok {
				t.Fatal("slow failure not recorded")
			}
			if upper := min(step+step/2, 2*time.Minute); d < min(step, 2*time.Minute) || d > upper {
				t.Fatalf("delay %v for step %v: want within [%v, %v]", d, step, step, upper)
			}
			if step == held {
				firsts[d] = true
			}
			step = min(2*step, 2*time.Minute)
		}
	}
	if len(firsts) < 100 {
		t.Errorf("200 sockets that stalled together took %d distinct first delays; want them spread", len(firsts))
	}
}
