package pluginwatcher

import (
	"testing"
	"time"
)

// TestConsistentlyChecksBothEnds: a first check that takes longer than the
// whole window (a slow machine) still leads to a check after the window,
// so consistently never passes without looking at the end of the window.
func TestConsistentlyChecksBothEnds(t *testing.T) {
	const window = 20 * time.Millisecond
	start := time.Now()
	var calls int
	var lastCall time.Duration
	consistently(t, "always true, first check slow", window, func() bool {
		calls++
		lastCall = time.Since(start)
		if calls == 1 {
			time.Sleep(3 * window)
		}
		return true
	})
	if calls < 2 || lastCall < window {
		t.Fatalf("cond called %d times, last at %v; want a check at the start and one after the %v window", calls, lastCall, window)
	}
}
