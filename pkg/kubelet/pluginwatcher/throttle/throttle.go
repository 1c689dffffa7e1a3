package throttle

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttler admits registration attempts under a per-key rate limit.
type Throttler interface {
	// Admit returns true when path may proceed under key, consuming a
	// token. Otherwise path is parked and handed to the release function
	// once a token is reserved for it.
	Admit(key, path string) bool
	// Forget drops path from whatever bucket it waits in (the socket is
	// gone).
	Forget(path string)
}

// Buckets is the Throttler that keeps one token bucket per key (a plugin
// name). A socket that finds its bucket empty is parked, not queued: it
// holds no slot, and one timer per key releases parked sockets newest first
// as tokens refill. Sockets of other keys never wait behind a parked one.
type Buckets struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	now     func() time.Time
	release func(path string)
	buckets map[string]*bucket
	// where maps a parked or granted path to its bucket key.
	where map[string]string
	seq   uint64
	// gcAt is the bucket count at which idle buckets are collected next.
	// It doubles the live count after each collection, so that collecting
	// costs O(1) amortised per new bucket even when few are idle.
	gcAt int
}

type bucket struct {
	lim     *rate.Limiter
	parked  map[string]uint64 // path -> park order
	granted map[string]bool   // released paths that already own a token
	timer   *time.Timer
}

const throttleGCThreshold = 1024

var _ Throttler = &Buckets{}

// New returns Buckets of burst tokens refilled at qps per second, reading
// the time from now (time.Now when nil). release(path) is called when a
// parked path is granted a token.
func New(qps float64, burst int, release func(path string), now func() time.Time) *Buckets {
	if now == nil {
		now = time.Now
	}
	return &Buckets{
		limit:   rate.Limit(qps),
		burst:   burst,
		now:     now,
		release: release,
		buckets: map[string]*bucket{},
		where:   map[string]string{},
	}
}

// Admit implements Throttler.
func (t *Buckets) Admit(key, path string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bucketLocked(key)
	if b.granted[path] {
		delete(b.granted, path)
		delete(t.where, path)
		return true
	}
	if _, ok := b.parked[path]; !ok && len(b.parked) == 0 && b.lim.AllowN(t.now(), 1) {
		return true
	}
	t.seq++
	b.parked[path] = t.seq
	t.where[path] = key
	t.armLocked(key, b)
	return false
}

// Forget implements Throttler.
func (t *Buckets) Forget(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key, ok := t.where[path]
	if !ok {
		return
	}
	delete(t.where, path)
	if b := t.buckets[key]; b != nil {
		delete(b.parked, path)
		delete(b.granted, path)
	}
}

func (t *Buckets) bucketLocked(key string) *bucket {
	b := t.buckets[key]
	if b == nil {
		if len(t.buckets) >= max(t.gcAt, throttleGCThreshold) {
			t.gcLocked()
			t.gcAt = 2 * len(t.buckets)
		}
		b = &bucket{
			lim:     rate.NewLimiter(t.limit, t.burst),
			parked:  map[string]uint64{},
			granted: map[string]bool{},
		}
		t.buckets[key] = b
	}
	return b
}

func (t *Buckets) armLocked(key string, b *bucket) {
	if b.timer != nil {
		return
	}
	now := t.now()
	r := b.lim.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	r.CancelAt(now)
	b.timer = time.AfterFunc(delay, func() { t.fire(key) })
}

// fire releases as many parked paths of key as there are tokens, newest
// first, and re-arms the timer if some remain parked.
func (t *Buckets) fire(key string) {
	var out []string
	t.mu.Lock()
	b := t.buckets[key]
	if b == nil {
		t.mu.Unlock()
		return
	}
	b.timer = nil
	for len(b.parked) > 0 && b.lim.AllowN(t.now(), 1) {
		p := newestParked(b.parked)
		delete(b.parked, p)
		b.granted[p] = true
		out = append(out, p)
	}
	if len(b.parked) > 0 {
		t.armLocked(key, b)
	}
	t.mu.Unlock()
	for _, p := range out {
		t.release(p)
	}
}

func newestParked(parked map[string]uint64) string {
	var best string
	var bestSeq uint64
	for p, s := range parked {
		if s >= bestSeq {
			best, bestSeq = p, s
		}
	}
	return best
}

// gcLocked drops idle buckets whose tokens have fully refilled.
func (t *Buckets) gcLocked() {
	now := t.now()
	for k, b := range t.buckets {
		if len(b.parked) == 0 && len(b.granted) == 0 && b.timer == nil && b.lim.TokensAt(now) >= float64(t.burst) {
			delete(t.buckets, k)
		}
	}
}

// Stop cancels pending timers.
func (t *Buckets) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range t.buckets {
		if b.timer != nil {
			b.timer.Stop()
			b.timer = nil
		}
	}
}

// ParkedCount is the number of sockets currently parked.
func (t *Buckets) ParkedCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, b := range t.buckets {
		n += len(b.parked)
	}
	return n
}
