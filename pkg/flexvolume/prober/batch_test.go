package prober

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// gatedInit is a driver whose init touches started, then waits for gate to
// exist before answering.
func gatedInit(started, gate string) string {
	return fmt.Sprintf("#!/bin/sh\ntouch %s\nwhile [ ! -e %s ]; do sleep 0.01; done\n"+
		"echo '{\"status\":\"Success\",\"capabilities\":{\"attach\":false}}'\n", started, gate)
}

// TestInitBatchPublishedOnce: the results of inits that run together are
// published in one Snapshot when the last one finishes, not one Snapshot
// each (each publication copies every entry, so n drivers loaded together
// cost O(n²)).
func TestInitBatchPublishedOnce(t *testing.T) {
	const n = 20
	root, marks := t.TempDir(), t.TempDir()
	gate := filepath.Join(marks, "gate")
	opts := testOptions(&sink{})
	opts.SettleWait = time.Minute
	p := newTestProber(t, root, opts)
	for i := range n {
		started := filepath.Join(marks, fmt.Sprintf("started-%d", i))
		install(t, root, fmt.Sprintf("example.com~d%d", i), fmt.Sprintf("d%d", i), gatedInit(started, gate))
	}
	pollUntil(t, "every init to start", func() bool {
		m, _ := filepath.Glob(filepath.Join(marks, "started-*"))
		return len(m) == n
	})
	before := p.Snapshot().Generation
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	snap := waitFor(t, p, "every driver ready", func(s *Snapshot) bool {
		for i := range n {
			if !ready(fmt.Sprintf("example.com/d%d", i), false)(s) {
				return false
			}
		}
		return true
	})
	// One publication for the batch, and at most one more if a late scan
	// of the installs reconciled while it ran.
	if got := snap.Generation - before; got > 2 {
		t.Errorf("%d inits that ran together were published in %d Snapshots, want 1 (2 with a late scan)", n, got)
	}
}

// TestDeferredResultPublishedWhileOthersRun: a driver whose init finished
// while another's still runs is published within SettleWait, to a consumer
// watching Changed and to one whose Settling.Wait ended.
func TestDeferredResultPublishedWhileOthersRun(t *testing.T) {
	tests := []struct {
		name string
		// wait is how the consumer waits for the fast driver.
		wait func(t *testing.T, p Prober)
	}{
		{name: "flush timer, for Changed", wait: func(t *testing.T, p Prober) {
			waitFor(t, p, "the fast driver", ready("example.com/fast", false))
		}},
		{name: "Settling.Wait at its deadline", wait: func(t *testing.T, p Prober) {
			if s := p.Settling(); s != nil {
				s.Wait()
			}
			if !ready("example.com/fast", false)(p.Snapshot()) {
				t.Fatalf("fast driver not published when Wait returned: %s", describe(p.Snapshot()))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, marks := t.TempDir(), t.TempDir()
			opts := testOptions(&sink{})
			opts.SettleWait = 300 * time.Millisecond
			p := newTestProber(t, root, opts)
			gate := filepath.Join(marks, "gate")
			t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })
			install(t, root, "example.com~slow", "slow", gatedInit(filepath.Join(marks, "slow"), gate))
			pollUntil(t, "the slow init to start", func() bool { _, err := os.Stat(filepath.Join(marks, "slow")); return err == nil })
			install(t, root, "example.com~fast", "fast", script(capsNoAttach))
			rec := p.(*prober).rec
			pollUntil(t, "the fast init's result", func() bool {
				return rec.deferred.Load() || p.Snapshot().Entries["example.com/fast"] != nil
			})
			tc.wait(t, p)
			if p.Snapshot().Entries["example.com/slow"] != nil {
				t.Fatal("slow driver published before its init finished")
			}
		})
	}
}
