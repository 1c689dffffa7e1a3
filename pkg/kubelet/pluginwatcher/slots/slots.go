package slots

import (
	"container/list"
	"sync"
)

// Class says which share of the in-flight capacity one attempt on a
// socket may use.
type Class int

const (
	// Normal: the first attempt of a socket generation, or a socket
	// whose failed attempts all ended quickly. It may use every slot.
	Normal Class = iota
	// Suspect: a socket one of whose failed attempts held its slot
	// for at least SuspectAfter (a timeout, a stall, a very slow answer).
	// Suspect attempts use at most SuspectInFlight slots, so the rest stay
	// free for normal ones.
	Suspect
	numClasses
)

func (c Class) String() string {
	if c == Suspect {
		return "suspect"
	}
	return "normal"
}

// Limiter bounds the registration attempts in flight.
type Limiter interface {
	// Acquire returns true if path may start an attempt of class c now.
	// Otherwise path is parked and requeued once it is granted a slot.
	Acquire(path string, c Class) bool
	// Release ends path's attempt.
	Release(path string)
}

// Observer is told of the attempts in flight after every change and of
// each attempt that had to wait for a slot.
type Observer interface {
	ObserveInFlight(total, suspect int)
	ObserveWait(c Class)
}

// Slots is the Limiter that keeps the attempts in flight: at most max in all, of which at
// most suspectMax suspect. An attempt that finds its share full is parked,
// not queued: it holds nothing, and when a slot frees the oldest parked
// path is granted it (normal ones first) and requeued. A granted path
// starts on its grant when it is next dispatched, so it cannot be
// overtaken by paths that arrive later.
//
// It is safe for concurrent use. Callers never hold a slot for one path
// twice: the work queue never hands out a path that is being processed.
type Slots struct {
	mu       sync.Mutex
	max      [numClasses]int // max[Normal] is the total limit
	inFlight [numClasses]int // inFlight[Normal] counts every class
	// held maps a path in flight, or granted a slot but not yet started,
	// to the class whose share it uses.
	held    map[string]Class
	granted map[string]bool
	// parked is a FIFO per class; where finds a path's element.
	parked  [numClasses]*list.List
	where   map[string]*list.Element
	requeue func(path string)
	// observer is told of the in-flight counts after every change and of
	// each path that had to wait; nil in unit tests that do not need it.
	observer Observer
}

var _ Limiter = &Slots{}

// New returns Slots for at most maxInFlight attempts, of which at most
// suspectInFlight suspect ones. requeue(path) is called when a parked path
// is granted a slot; observer may be nil.
func New(maxInFlight, suspectInFlight int, requeue func(path string), observer Observer) *Slots {
	s := &Slots{
		max:      [numClasses]int{maxInFlight, suspectInFlight},
		held:     map[string]Class{},
		granted:  map[string]bool{},
		where:    map[string]*list.Element{},
		requeue:  requeue,
		observer: observer,
	}
	for c := range s.parked {
		s.parked[c] = list.New()
	}
	return s
}

// Acquire returns true if path may start an attempt of class c now: it
// holds a grant, or c's share has room. Otherwise path is parked (once;
// parking again only updates its class) and requeued when it is granted a
// slot.
func (s *Slots) Acquire(path string, c Class) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.granted[path] {
		delete(s.granted, path)
		return true
	}
	if s.fitsLocked(c) {
		s.unparkLocked(path)
		s.takeLocked(path, c)
		return true
	}
	if e, ok := s.where[path]; ok {
		if e.Value.(parkedPath).class == c {
			return false
		}
		s.unparkLocked(path)
	}
	s.where[path] = s.parked[c].PushBack(parkedPath{path: path, class: c})
	if s.observer != nil {
		s.observer.ObserveWait(c)
	}
	return false
}

type parkedPath struct {
	path  string
	class Class
}

// Release ends path's attempt and hands the freed capacity to parked
// paths.
func (s *Slots) Release(path string) {
	var out []string
	s.mu.Lock()
	if c, ok := s.held[path]; ok {
		delete(s.held, path)
		s.inFlight[Normal]--
		if c == Suspect {
			s.inFlight[Suspect]--
		}
	}
	for c := Normal; c < numClasses; c++ {
		for s.parked[c].Len() > 0 && s.fitsLocked(c) {
			p := s.parked[c].Front().Value.(parkedPath).path
			s.unparkLocked(p)
			s.takeLocked(p, c)
			s.granted[p] = true
			out = append(out, p)
		}
	}
	s.report()
	s.mu.Unlock()
	for _, p := range out {
		s.requeue(p)
	}
}

func (s *Slots) fitsLocked(c Class) bool {
	return s.inFlight[Normal] < s.max[Normal] && s.inFlight[c] < s.max[c]
}

func (s *Slots) takeLocked(path string, c Class) {
	s.held[path] = c
	s.inFlight[Normal]++
	if c == Suspect {
		s.inFlight[Suspect]++
	}
	s.report()
}

func (s *Slots) unparkLocked(path string) {
	if e, ok := s.where[path]; ok {
		s.parked[e.Value.(parkedPath).class].Remove(e)
		delete(s.where, path)
	}
}

func (s *Slots) report() {
	if s.observer != nil {
		s.observer.ObserveInFlight(s.inFlight[Normal], s.inFlight[Suspect])
	}
}

// Counts returns the attempts in flight (including granted ones), the
// suspect ones among them, and how many paths are parked.
func (s *Slots) Counts() (inFlight, suspect, parked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight[Normal], s.inFlight[Suspect], len(s.where)
}
