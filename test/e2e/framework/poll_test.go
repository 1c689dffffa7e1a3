package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPoll drives Poll with a fake condition that is done from its n-th
// call on (0: never), at a 1 ms interval.
func TestPoll(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := map[string]struct {
		ctx       context.Context
		timeout   time.Duration
		doneAt    int
		opts      []PollOption
		wantErr   string // "" for success
		wantCalls int    // -1: at least two
	}{
		"done at once, no wait":            {timeout: time.Hour, doneAt: 1, wantCalls: 1},
		"done at the third check":          {timeout: time.Hour, doneAt: 3, wantCalls: 3},
		"zero timeout: until the ctx ends": {timeout: 0, doneAt: 3, wantCalls: 3},
		"never done: the timeout ends it":  {timeout: 30 * time.Millisecond, wantErr: "deadline exceeded", wantCalls: -1},
		"the ctx ended before the call":    {ctx: canceled, timeout: time.Hour, wantErr: "canceled", wantCalls: 1},
		"negative timeout":                 {timeout: -time.Second, doneAt: 1, wantErr: "negative timeout"},
		"zero interval":                    {timeout: time.Hour, doneAt: 1, opts: []PollOption{PollEvery(0)}, wantErr: "want one above zero"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			calls := 0
			cond := func(ctx context.Context) bool {
				if ctx == nil {
					t.Error("cond got no context")
				}
				calls++
				return tc.doneAt > 0 && calls >= tc.doneAt
			}
			opts := append([]PollOption{PollEvery(time.Millisecond)}, tc.opts...)
			err := Poll(ctx, tc.timeout, cond, opts...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Poll: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Poll: %v, want an error containing %q", err, tc.wantErr)
			case tc.wantCalls >= 0 && calls != tc.wantCalls:
				t.Errorf("cond called %d times, want %d", calls, tc.wantCalls)
			case tc.wantCalls < 0 && calls < 2:
				t.Errorf("cond called %d times, want it polled at least twice", calls)
			}
		})
	}
}

// TestPollTimeoutIsContextError: a timed-out Poll returns an error that
// says so, as wait.PollUntilContextTimeout does.
func TestPollTimeoutIsContextError(t *testing.T) {
	err := Poll(t.Context(), 5*time.Millisecond, func(context.Context) bool { return false }, PollEvery(time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll: %v, want context.DeadlineExceeded", err)
	}
}

// TestPollDefaultInterval: without PollEvery, Poll checks at once (no
// wait for the first PollInterval).
func TestPollDefaultInterval(t *testing.T) {
	start := time.Now()
	if err := Poll(t.Context(), time.Hour, func(context.Context) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= PollInterval {
		t.Errorf("a condition done at once took %v, want less than PollInterval %v", d, PollInterval)
	}
}
