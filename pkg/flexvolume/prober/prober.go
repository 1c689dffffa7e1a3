package prober

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
)

// Prober keeps the set of flexvolume drivers installed in one plugin
// directory. It is safe for concurrent use.
type Prober interface {
	// Snapshot returns the current state. It is one atomic load: no lock,
	// no system call, no allocation.
	Snapshot() *Snapshot
	// Stats returns the Prober's counters.
	Stats() Stats
	// Dir returns the plugin directory.
	Dir() string
	// Settling returns the driver inits running now, or nil when none
	// does. It is one atomic load.
	Settling() *Settling
}

type prober struct {
	dir   string
	rec   *reconciler
	stats *stats
}

var _ Prober = &prober{}

// New starts watching dir and returns once the drivers found there are
// initialised, or after Options.InitialSyncTimeout. Everything stops when
// ctx ends. runner runs the drivers; pkg/util/groupexec is recommended.
//
// A plugin directory that cannot be created or watched is not an error: it
// is retried with backoff and reported as a problem meanwhile.
func New(ctx context.Context, dir string, runner utilexec.Interface, opts Options) (Prober, error) {
	if dir == "" {
		return nil, errors.New("flexvolume plugin directory not set")
	}
	if runner == nil {
		return nil, errors.New("flexvolume driver runner not set")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("flexvolume plugin directory %q: %w", dir, err)
	}
	registerMetrics()
	opts = opts.withDefaults()
	st := &stats{}
	dsw := newDesiredState()
	rec := newReconciler(ctx, &opts, runner, dsw, st)
	pop, err := newPopulator(abs, &opts, dsw, st)
	if err != nil {
		return nil, fmt.Errorf("flexvolume plugin directory %q: %w", dir, err)
	}
	pop.start(ctx)
	go pop.run(ctx)
	go rec.run(ctx)
	p := &prober{dir: abs, rec: rec, stats: st}
	t := opts.Clock.NewTimer(opts.InitialSyncTimeout)
	defer t.Stop()
	select {
	case <-rec.synced:
	case <-t.C():
		klog.FromContext(ctx).Info("Flexvolume drivers still initialising; continuing", "dir", abs,
			"timeout", opts.InitialSyncTimeout)
	case <-ctx.Done():
	}
	return p, nil
}

func (p *prober) Snapshot() *Snapshot { return p.rec.cur.Load() }
func (p *prober) Stats() Stats        { return p.stats.get() }
func (p *prober) Dir() string         { return p.dir }
func (p *prober) Settling() *Settling { return p.rec.settling.Load() }
