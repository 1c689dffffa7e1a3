package slots

import (
	"slices"
	"testing"
)

// slotStep is one call on slots: acquire (want is its result) or release
// (requeued lists the paths granted a slot by it, in order).
type slotStep struct {
	op       string
	path     string
	class    Class
	want     bool
	requeued []string
}

func acq(path string, c Class, want bool) slotStep {
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
const nrm, sus = Normal, Suspect

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
			sl := New(tc.max, tc.suspectMax, func(p string) { requeued = append(requeued, p) }, nil)
			for i, st := range tc.steps {
				switch st.op {
				case "acquire":
					if got := sl.Acquire(st.path, st.class); got != st.want {
						t.Fatalf("step %d: acquire(%s, %v) = %v, want %v", i, st.path, st.class, got, st.want)
					}
				case "release":
					requeued = nil
					sl.Release(st.path)
					if !slices.Equal(requeued, st.requeued) {
						t.Fatalf("step %d: release(%s) requeued %v, want %v", i, st.path, requeued, st.requeued)
					}
				}
			}
			inFlight, suspect, _ := sl.Counts()
			if inFlight != tc.wantInFlight || suspect != tc.wantSuspect {
				t.Errorf("in flight %d (suspect %d), want %d (suspect %d)", inFlight, suspect, tc.wantInFlight, tc.wantSuspect)
			}
		})
	}
}
