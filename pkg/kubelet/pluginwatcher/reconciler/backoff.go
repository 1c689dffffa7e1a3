package reconciler

import (
	"math/rand/v2"
	"sync"
	"time"
)

// retryState is the per-socket failure history of one generation.
type retryState struct {
	gen          uint64
	failures     int
	refused      int
	firstRefused time.Time
	// slow counts failed attempts that held their slot for at least
	// SuspectAfter; one is enough to make the socket suspect until it
	// registers or is replaced.
	slow int
}

// retries tracks backoff per socket path.
type retries struct {
	mu     sync.Mutex
	base   time.Duration
	max    time.Duration
	byPath map[string]*retryState
	// jitter stretches each delay by a random fraction of up to jitter of
	// it, so that sockets that failed together do not retry together.
	jitter float64
}

// retryJitter is the default jitter of retries: a delay d becomes one in
// [d, 1.5d), capped at the maximum.
const retryJitter = 0.5

func newRetries(base, max time.Duration) *retries {
	return &retries{base: base, max: max, byPath: map[string]*retryState{}, jitter: retryJitter}
}

// next records a failure of (path, gen) and returns the delay before the
// next attempt: base, 2*base, 4*base, ... capped at max, each stretched by
// the jitter.
func (r *retries) next(path string, gen uint64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stateLocked(path, gen)
	d := r.base
	for i := 0; i < st.failures && d < r.max; i++ {
		d *= 2
	}
	st.failures++
	return min(r.stretch(d), r.max)
}

// refused records a refused connection and returns how many consecutive
// refusals were seen and when the first one happened.
func (r *retries) refused(path string, gen uint64, now time.Time) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stateLocked(path, gen)
	if st.refused == 0 {
		st.firstRefused = now
	}
	st.refused++
	return st.refused, st.firstRefused
}

// answered clears the refusal streak: the socket has a listener.
func (r *retries) answered(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.byPath[path]; st != nil {
		st.refused = 0
	}
}

// slowFailure records that a failed attempt of (path, gen) held its slot
// for held, and returns the least delay before the next attempt: held,
// doubled for every earlier slow failure, stretched by the jitter, capped
// at max. A suspect socket therefore spends at most half its time in
// flight, then a quarter, and so on. The jitter matters most here: sockets
// that stall together (created together, each holding its slot for the
// whole RPC timeout) would otherwise time out and retry together for ever,
// a burst of dials and gRPC clients that a plugin registering at that
// moment waits behind. It returns false if gen is not the generation
// whose failures are being tracked (the socket was replaced meanwhile).
func (r *retries) slowFailure(path string, gen uint64, held time.Duration) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.byPath[path]
	if st == nil || st.gen != gen {
		return 0, false
	}
	d := max(held, r.base)
	for i := 0; i < st.slow && d < r.max; i++ {
		d *= 2
	}
	st.slow++
	return min(r.stretch(d), r.max), true
}

// stretch lengthens d by a random fraction of up to r.jitter of it.
func (r *retries) stretch(d time.Duration) time.Duration {
	if r.jitter <= 0 {
		return d
	}
	return d + time.Duration(rand.Float64()*r.jitter*float64(d)) // #nosec G404 -- spreading retries, not security
}

// suspect reports whether (path, gen) has had a slow failure.
func (r *retries) suspect(path string, gen uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.byPath[path]
	return st != nil && st.gen == gen && st.slow > 0
}

func (r *retries) forget(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byPath, path)
}

func (r *retries) stateLocked(path string, gen uint64) *retryState {
	st := r.byPath[path]
	if st == nil || st.gen != gen {
		st = &retryState{gen: gen}
		r.byPath[path] = st
	}
	return st
}
