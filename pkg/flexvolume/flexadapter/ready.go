package flexadapter

import (
	"context"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

// WatchReady calls fn, from its own goroutine, with the names of the
// drivers that became ready (loaded, or a new version loaded) in each
// newer snapshot of p, until ctx ends. Drivers ready when it is called are
// not reported. fn must not block for long.
func (p *Source) WatchReady(ctx context.Context, fn func(ctx context.Context, drivers []string)) {
	go func() {
		snap := p.lib.Snapshot()
		for {
			select {
			case <-ctx.Done():
				return
			case <-snap.Changed():
			}
			next := p.lib.Snapshot()
			if ready := newlyReady(snap, next); len(ready) > 0 {
				fn(ctx, ready)
			}
			snap = next
		}
	}()
}

// newlyReady returns the drivers ready in cur that were not ready in prev,
// or were with another version.
func newlyReady(prev, cur *prober.Snapshot) []string {
	var out []string
	for _, name := range sortedKeys(cur.Entries) {
		e := cur.Entries[name]
		if e.State != prober.StateReady {
			continue
		}
		if old, ok := prev.Entries[name]; ok && old.State == prober.StateReady && old.Version == e.Version {
			continue
		}
		out = append(out, name)
	}
	return out
}
