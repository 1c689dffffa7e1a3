package pluginwatcher

import (
	"container/list"
	"sync"
)

// attemptClass says which share of the in-flight capacity one attempt on a
// socket may use.
type attemptClass int

const (
	// classNormal: the first attempt of a socket generation, or a socket
	// whose failed attempts all ended quickly. It may use every slot.
	classNormal attemptClass = iota
	// classSuspect: a socket one of whose failed attempts held its slot
	// for at least SuspectAfter (a timeout, a stall, a very slow answer).
	// Suspect attempts use at most SuspectInFlight slots, so the rest stay
	// free for normal ones.
	classSuspect
	numClasses
)

func (c attemptClass) String() string {
	if c == classSuspect {
		return "suspect"
	}
	return "normal"
}

// slots limits the attempts in flight: at most max in all, of which at
// most suspectMax suspect. An attempt that finds its share full is parked,
// not queued: it holds nothing, and when a slot frees the oldest parked
// path is granted it (normal ones first) and requeued. A granted path
// starts on its grant when it is next dispatched, so it cannot be
// overtaken by paths that arrive later.
//
// It is safe for concurrent use. Callers never hold a slot for one path
// twice: the work queue never hands out a path that is being processed.
type slots struct {
	mu       sync.Mutex
	max      [numClasses]int // max[classNormal] is the total limit
	inFlight [numClasses]int // inFlight[classNormal] counts every class
	// held maps a path in flight, or granted a slot but not yet started,
	// to the class whose share it uses.
	held    map[string]attemptClass
	granted map[string]bool
	// parked is a FIFO per class; where finds a path's element.
	parked  [numClasses]*list.List
	where   map[string]*list.Element
	requeue func(path string)
	// observe reports the in-flight counts after every change and each
	// path that had to wait; nil in unit tests that do not need it.
	observe func(inFlight, suspect int)
	waited  func(class attemptClass)
}

func newSlots(maxInFlight, suspectInFlight int, requeue func(string)) *slots {
	s := &slots{
		max:     [numClasses]int{maxInFlight, suspectInFlight},
		held:    map[string]attemptClass{},
		granted: map[string]bool{},
		where:   map[string]*list.Element{},
		requeue: requeue,
	}
	for c := range s.parked {
		s.parked[c] = list.New()
	}
	return s
}

// acquire returns true if path may start an attempt of class c now: it
// holds a grant, or c's share has room. Otherwise path is parked (once;
// parking again only updates its class) and requeued when it is granted a
// slot.
func (s *slots) acquire(path string, c attemptClass) bool {
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
	if s.waited != nil {
		s.waited(c)
	}
	return false
}

type parkedPath struct {
	path  string
	class attemptClass
}

// release ends path's attempt and hands the freed capacity to parked
// paths.
func (s *slots) release(path string) {
	var out []string
	s.mu.Lock()
	if c, ok := s.held[path]; ok {
		delete(s.held, path)
		s.inFlight[classNormal]--
		if c == classSuspect {
			s.inFlight[classSuspect]--
		}
	}
	for c := classNormal; c < numClasses; c++ {
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

func (s *slots) fitsLocked(c attemptClass) bool {
	return s.inFlight[classNormal] < s.max[classNormal] && s.inFlight[c] < s.max[c]
}

func (s *slots) takeLocked(path string, c attemptClass) {
	s.held[path] = c
	s.inFlight[classNormal]++
	if c == classSuspect {
		s.inFlight[classSuspect]++
	}
	s.report()
}

func (s *slots) unparkLocked(path string) {
	if e, ok := s.where[path]; ok {
		s.parked[e.Value.(parkedPath).class].Remove(e)
		delete(s.where, path)
	}
}

func (s *slots) report() {
	if s.observe != nil {
		s.observe(s.inFlight[classNormal], s.inFlight[classSuspect])
	}
}

// counts returns the attempts in flight (including granted ones), the
// suspect ones among them, and how many paths are parked.
func (s *slots) counts() (inFlight, suspect, parked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight[classNormal], s.inFlight[classSuspect], len(s.where)
}
