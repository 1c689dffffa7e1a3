package prober

import (
	"testing"
	"time"
)

// slowInit answers init after a pause of the given length (a shell sleep).
func slowInit(pause string) string {
	return "#!/bin/sh\nsleep " + pause + "\necho '{\"status\":\"Success\",\"capabilities\":{\"attach\":false}}'\n"
}

// TestSettling: while an install's init runs, Settling lets a consumer wait
// for its result; the wait ends when the init is published, or at the
// SettleWait deadline for a driver that takes longer; and nothing is
// settling when no init runs.
func TestSettling(t *testing.T) {
	tests := []struct {
		name       string
		pause      string
		settleWait time.Duration
		// published: the driver is in the snapshot when Wait returns.
		published bool
	}{
		{name: "wait ends when the init is published", pause: "0.3", settleWait: 20 * time.Second, published: true},
		{name: "wait ends at the deadline for a slow init", pause: "5", settleWait: 200 * time.Millisecond, published: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			opts := testOptions(&sink{})
			opts.SettleWait = tc.settleWait
			p := newTestProber(t, root, opts)
			if p.Settling() != nil {
				t.Fatal("settling with no driver installed")
			}
			install(t, root, "example.com~slow", "slow", slowInit(tc.pause))
			pollUntil(t, "the init to start", func() bool { return p.Settling() != nil })
			p.Settling().Wait()
			if got := p.Snapshot().Entries["example.com/slow"] != nil; got != tc.published {
				t.Fatalf("driver published when Wait returned = %v, want %v", got, tc.published)
			}
			waitFor(t, p, "the init", ready("example.com/slow", false))
			pollUntil(t, "settling to end", func() bool { return p.Settling() == nil })
		})
	}
}

// TestSettlingDisabled: a negative SettleWait never makes consumers wait.
func TestSettlingDisabled(t *testing.T) {
	root := t.TempDir()
	opts := testOptions(&sink{})
	opts.SettleWait = -1
	p := newTestProber(t, root, opts)
	install(t, root, "example.com~slow", "slow", slowInit("0.3"))
	pollUntil(t, "the init", func() bool {
		if p.Settling() != nil {
			t.Fatal("settling although disabled")
		}
		return ready("example.com/slow", false)(p.Snapshot())
	})
}
