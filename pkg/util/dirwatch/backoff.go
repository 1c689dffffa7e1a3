package dirwatch

import "time"

// Backoff is a capped exponential delay: Min, then doubling up to Max.
// The zero value is not useful; it is not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next returns the next delay.
func (b *Backoff) Next() time.Duration {
	switch {
	case b.cur == 0:
		b.cur = b.Min
	case b.cur < b.Max:
		b.cur = min(2*b.cur, b.Max)
	}
	return b.cur
}

// Reset makes the next delay Min again.
func (b *Backoff) Reset() { b.cur = 0 }
