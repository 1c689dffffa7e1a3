package prober

import (
	"context"
	"sync"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// initResult is the outcome of one driver init.
type initResult struct {
	want desiredDriver
	drv  driver.Driver
	caps driver.Capabilities
	err  error
}

// executor runs driver inits, at most one at a time per driver, each in its
// own goroutine so that a hanging driver delays nobody else. Each result is
// passed to deliver from that goroutine. start, finished, isRunning and idle
// are called under the reconciler's lock only.
type executor struct {
	running map[string]bool
	deliver func(initResult)
	wg      sync.WaitGroup
	stats   *stats
}

func newExecutor(st *stats, deliver func(initResult)) *executor {
	return &executor{running: map[string]bool{}, deliver: deliver, stats: st}
}

func (e *executor) isRunning(name string) bool { return e.running[name] }

// start runs drv's init for want; the result is delivered.
func (e *executor) start(ctx context.Context, want desiredDriver, drv driver.Driver) {
	e.running[want.name] = true
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		caps, err := drv.Init(ctx)
		e.stats.inits.Add(1)
		result := "success"
		if err != nil {
			e.stats.initFailures.Add(1)
			result = "failure"
		}
		initsTotal.WithLabelValues(result).Inc()
		e.deliver(initResult{want: want, drv: drv, caps: caps, err: err})
	}()
}

// finished marks a result as received.
func (e *executor) finished(name string) { delete(e.running, name) }

// idle reports whether no init is running.
func (e *executor) idle() bool { return len(e.running) == 0 }

// wait waits for every init goroutine to return.
func (e *executor) wait() { e.wg.Wait() }
