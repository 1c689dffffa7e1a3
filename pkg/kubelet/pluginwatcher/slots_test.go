package pluginwatcher

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// slotStep is one call on slots: acquire (want is its result) or release
// (requeued lists the paths granted a slot by it, in order).
type slotStep struct {
	op       string
	path     string
	class    attemptClass
	want     bool
	requeued []string
}

func acq(path string, c attemptClass, want bool) slotStep {
	return slotStep{op: "acquire", path: path, class: c, want: want}
}

func rel(path string, requeued ...string) slotStep {
	return slotStep{op: "release", path: path, requeued: requeued}
}

// slotCase is a sequence of calls on slots of the given size and the
// attempts in flight at the end.
type slotCase struct {
	max, suspectMax int
	steps           []slotStep
	wantInFlight    int
	wantSuspect     int
}

// Short names for the tables below.
const nrm, sus = classNormal, classSuspect

var slotCases = map[string]slotCase{
	"normal attempts use every slot": {
		max: 3, suspectMax: 1,
		steps:        []slotStep{acq("a", nrm, true), acq("b", nrm, true), acq("c", nrm, true), acq("d", nrm, false)},
		wantInFlight: 3,
	},
	"suspect attempts are capped, normal ones still start": {
		max: 3, suspectMax: 1,
		steps:        []slotStep{acq("h1", sus, true), acq("h2", sus, false), acq("h3", sus, false), acq("good", nrm, true)},
		wantInFlight: 2, wantSuspect: 1,
	},
	"a freed slot goes to the oldest parked normal path first": {
		max: 2, suspectMax: 1,
		steps: []slotStep{
			acq("a", nrm, true), acq("b", nrm, true),
			acq("h", sus, false), acq("c", nrm, false), acq("d", nrm, false),
			rel("a", "c"), rel("b", "d"), rel("c", "h"),
		},
		wantInFlight: 2, wantSuspect: 1,
	},
	"a suspect slot freed goes to a parked normal path when the total is full": {
		max: 2, suspectMax: 1,
		steps: []slotStep{
			acq("h1", sus, true), acq("a", nrm, true), acq("h2", sus, false), acq("b", nrm, false),
			rel("h1", "b"),
		},
		wantInFlight: 2,
	},
	"a granted path starts on its grant and cannot be overtaken": {
		max: 1, suspectMax: 1,
		steps: []slotStep{
			acq("a", nrm, true), acq("b", nrm, false), rel("a", "b"),
			acq("late", nrm, false), acq("b", nrm, true), rel("b", "late"), acq("late", nrm, true),
		},
		wantInFlight: 1,
	},
	"parking twice keeps one place, parking with another class moves it": {
		max: 2, suspectMax: 1,
		steps: []slotStep{
			acq("h", sus, true), acq("a", nrm, true), acq("x", sus, false), acq("x", sus, false),
			acq("x", nrm, false), rel("a", "x"),
		},
		wantInFlight: 2, wantSuspect: 1,
	},
	"releasing a path that holds nothing hands out nothing": {
		max: 1, suspectMax: 1,
		steps:        []slotStep{acq("a", nrm, true), acq("b", nrm, false), rel("zzz")},
		wantInFlight: 1,
	},
}

func TestSlots(t *testing.T) {
	for name, tc := range slotCases {
		t.Run(name, func(t *testing.T) {
			var requeued []string
			sl := newSlots(tc.max, tc.suspectMax, func(p string) { requeued = append(requeued, p) })
			for i, st := range tc.steps {
				switch st.op {
				case "acquire":
					if got := sl.acquire(st.path, st.class); got != st.want {
						t.Fatalf("step %d: acquire(%s, %v) = %v, want %v", i, st.path, st.class, got, st.want)
					}
				case "release":
					requeued = nil
					sl.release(st.path)
					if !slices.Equal(requeued, st.requeued) {
						t.Fatalf("step %d: release(%s) requeued %v, want %v", i, st.path, requeued, st.requeued)
					}
				}
			}
			inFlight, suspect, _ := sl.counts()
			if inFlight != tc.wantInFlight || suspect != tc.wantSuspect {
				t.Errorf("in flight %d (suspect %d), want %d (suspect %d)", inFlight, suspect, tc.wantInFlight, tc.wantSuspect)
			}
		})
	}
}

// TestSlowFailureBackoff: each slow failure waits at least as long as the
// attempt held its slot, doubling, capped at RetryMax; a replaced socket
// (other generation) starts afresh.
func TestSlowFailureBackoff(t *testing.T) {
	r := newRetries(10*time.Millisecond, 2*time.Minute)
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
