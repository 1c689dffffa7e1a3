package reconciler

import (
	"context"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/slots"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/throttle"
)

// Reconciler converges one socket path at a time. The caller takes paths
// from a per-path work queue, so one path is never reconciled concurrently.
type Reconciler interface {
	// Class returns the capacity class of path's next attempt and the
	// socket generation it was decided for (0 when the socket is gone).
	Class(path string) (slots.Class, uint64)
	// Attempt converges path once, in an in-flight slot acquired for
	// generation gen, and returns how long to wait before the next attempt
	// (0: only when a new event arrives).
	Attempt(ctx context.Context, path string, gen uint64) time.Duration
	// ConnectionDropped queues a liveness check of the plugin registered
	// at path, if any; the executor's Monitor calls it.
	ConnectionDropped(path string)
	// HandlerAdded queues at once, with their backoff reset, the sockets
	// whose last attempt found no handler for pluginType. The caller makes
	// the handler visible to Dependencies.Handler first.
	HandlerAdded(pluginType string)
}

// Config is the part of the watcher's options the reconciler applies. The
// values are used as given; the watcher fills in the defaults.
type Config struct {
	// RetryBase and RetryMax shape the per-socket exponential backoff.
	RetryBase, RetryMax time.Duration
	// StaleAttempts refusals over at least StaleGrace make a socket stale
	// (negative: never).
	StaleAttempts int
	StaleGrace    time.Duration
	// SuspectAfter is how long a failed attempt may hold its slot before
	// its socket becomes suspect.
	SuspectAfter time.Duration
	// IdentityPolicy applies when a socket's name does not carry its
	// plugin's name.
	IdentityPolicy socket.IdentityPolicy
	// PluginClientTimeout is passed to Handler.RegisterPlugin.
	PluginClientTimeout *time.Duration
	// ThrottleRate and ThrottleBurst are only logged when a plugin is
	// throttled; Dependencies.Throttle applies them.
	ThrottleRate  float64
	ThrottleBurst int
}

// Dependencies are the roles the reconciler drives. Every field but Now
// and Stat is required.
type Dependencies struct {
	DesiredState cache.DesiredStateOfWorld
	ActualState  cache.ActualStateOfWorld
	Executor     executor.Executor
	Monitor      executor.Monitor
	Throttle     throttle.Throttler
	Reporter     report.Reporter
	Metrics      *metrics.Metrics
	// Handler returns the handler of a plugin type.
	Handler func(pluginType string) (cache.Handler, bool)
	// Pending, if set, says why a plugin type without a handler yet is
	// expected to get one (false: it is not expected). The reason is sent
	// to the type's plugins.
	Pending func(pluginType string) (reason string, ok bool)
	// Enqueue queues path for another attempt.
	Enqueue func(path string)
	// Now defaults to time.Now, Stat to socket.Lstat.
	Now  func() time.Time
	Stat func(path string) (socket.ID, bool, error)
}

// New returns a Reconciler that applies cfg and drives deps.
func New(cfg Config, deps Dependencies) Reconciler {
	return newReconciler(cfg, deps)
}

func newReconciler(cfg Config, deps Dependencies) *reconciler {
	r := &reconciler{
		opts:     cfg,
		dsw:      deps.DesiredState,
		asw:      deps.ActualState,
		exec:     deps.Executor,
		monitors: deps.Monitor,
		throttle: deps.Throttle,
		gate:     newKeyGate(deps.Enqueue),
		retries:  newRetries(cfg.RetryBase, cfg.RetryMax),
		rep:      deps.Reporter,
		metrics:  deps.Metrics,
		handler:  deps.Handler,
		pending:  deps.Pending,
		waiting:  newHandlerWaits(),
		enqueue:  deps.Enqueue,
		now:      deps.Now,
		stat:     deps.Stat,
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.stat == nil {
		r.stat = socket.Lstat
	}
	if r.pending == nil {
		r.pending = func(string) (string, bool) { return "", false }
	}
	return r
}

var _ Reconciler = &reconciler{}
