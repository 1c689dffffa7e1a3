package reconciler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nodeplug/registrar"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/slots"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/throttle"
)

// bindListenRetry is the delay before re-dialling a socket that refused its
// first connection.
const bindListenRetry = time.Millisecond

// reconciler is the Reconciler: it compares the desired state (socket
// files) with the actual state (what the handlers know) for one socket
// path at a time and drives the executor and the handlers to converge.
// sync is called from Attempt,
// once per path taken from a per-path work queue, so one path is never
// synced concurrently; the key gate additionally serialises handler calls
// per plugin (type, name).
type reconciler struct {
	opts     Config
	dsw      cache.DesiredStateOfWorld
	asw      cache.ActualStateOfWorld
	exec     executor.Executor
	throttle throttle.Throttler
	gate     *keyGate
	retries  *retries
	monitors executor.Monitor
	rep      report.Reporter
	metrics  *metrics.Metrics
	handler  func(pluginType string) (cache.Handler, bool)
	pending  func(pluginType string) (string, bool)
	// waiting are the sockets whose last attempt found no handler.
	waiting *handlerWaits
	enqueue func(path string)
	now     func() time.Time
	// stat is socket.Lstat; tests replace it with a fake file system.
	stat func(path string) (socket.ID, bool, error)
	// gaugeMu makes the reset-and-set of the registered gauge atomic.
	gaugeMu sync.Mutex
}

// sync converges one path and returns how long to wait before syncing it
// again (0: only when a new event arrives).
func (r *reconciler) sync(ctx context.Context, path string) time.Duration {
	d, ok := r.current(path)
	if !ok {
		return r.syncGone(ctx, path)
	}
	inst, known := r.asw.Get(path)
	if known && inst.Gen != d.Gen {
		// Replaced in place (same path, new inode): the old generation
		// leaves first, then the new one registers.
		if !r.retire(ctx, inst) {
			return 0
		}
		known = false
	}
	if known && (inst.Rejected || inst.Registered && inst.Notified && !inst.Verify) {
		r.rep.Debug("Plugin socket needs nothing", "path", path)
		return 0
	}
	if known && inst.Registered {
		return r.recheck(ctx, d, inst)
	}
	return r.register(ctx, d)
}

// Class implements Reconciler.
func (r *reconciler) Class(path string) (slots.Class, uint64) {
	d, ok := r.dsw.Get(path)
	if !ok {
		return slots.Normal, 0
	}
	if r.retries.suspect(path, d.Gen) {
		return slots.Suspect, d.Gen
	}
	return slots.Normal, d.Gen
}

// Attempt implements Reconciler: one sync of path in an in-flight slot. An attempt that fails
// after holding its slot for SuspectAfter or longer makes the socket
// suspect and stretches its backoff to at least the time it held the slot,
// doubled for each earlier slow failure (retries.slowFailure).
func (r *reconciler) Attempt(ctx context.Context, path string, gen uint64) time.Duration {
	start := r.now()
	delay := r.sync(ctx, path)
	held := r.now().Sub(start)
	if delay <= 0 || held < r.opts.SuspectAfter || ctx.Err() != nil {
		return delay
	}
	least, ok := r.retries.slowFailure(path, gen, held)
	if !ok || least <= delay {
		return delay
	}
	now := r.now()
	r.asw.Update(path, func(i *cache.Instance) {
		// Keep the instance out of owner election for as long.
		if i.Gen == gen && i.RetryAt.After(now) {
			i.RetryAt = now.Add(least)
		}
	})
	r.rep.Debug("Plugin socket held its slot and failed, backing off", "path", path, "held", held, "retryIn", least)
	return least
}

// current returns the desired entry for path after checking the file
// itself, so that a missed or coalesced event cannot leave stale state.
func (r *reconciler) current(path string) (cache.DesiredSocket, bool) {
	d, ok := r.dsw.Get(path)
	if !ok {
		return d, false
	}
	id, isSock, err := r.stat(path)
	if err != nil || !isSock {
		r.dsw.Forget(path)
		return cache.DesiredSocket{}, false
	}
	if id != d.ID {
		r.dsw.Observe(path, d.Rel, id)
		d, ok = r.dsw.Get(path)
	}
	return d, ok
}

func (r *reconciler) syncGone(ctx context.Context, path string) time.Duration {
	r.throttle.Forget(path)
	r.retries.forget(path)
	r.waiting.remove(path)
	if inst, ok := r.asw.Get(path); ok {
		r.retire(ctx, inst)
	}
	return 0
}

// retire removes an instance whose socket went away or was replaced. Only
// the registered owner of a plugin key causes a DeRegister, with its own
// endpoint; then the newest remaining socket of that plugin is queued to
// take over. It returns false if the key is busy (the path is re-queued).
func (r *reconciler) retire(ctx context.Context, inst cache.Instance) bool {
	if !r.gate.tryLock(inst.Key, inst.Path) {
		return false
	}
	defer r.gate.unlock(inst.Key)
	if cur, ok := r.asw.Get(inst.Path); ok && cur.Registered {
		r.deregister(ctx, cur)
	}
	r.monitors.Stop(inst.Path)
	r.asw.Delete(inst.Path)
	if next, ok := r.asw.Elect(inst.Key, r.now()); ok {
		r.enqueue(next.Path)
	}
	return true
}

// register probes the socket, checks it and runs the owner election (or,
// under Policy.AllInstances, registers it beside the others).
func (r *reconciler) register(ctx context.Context, d cache.DesiredSocket) time.Duration {
	fileKey := throttle.FileKey(d.Rel)
	if !r.throttle.Admit(fileKey, d.Path) {
		r.throttled(fileKey, d.Path)
		return 0
	}
	info, conn, err := r.exec.Probe(ctx, d.Path)
	if err != nil {
		return r.probeFailed(ctx, d, err)
	}
	defer conn.Close()
	r.retries.answered(d.Path)

	// Recorded before the lookup, so that a handler added meanwhile
	// (HandlerAdded) finds this socket.
	r.waiting.add(d.Path, info.Type)
	h, ok := r.handler(info.Type)
	if !ok {
		return r.noHandler(ctx, conn, d, info.Type, info.Name)
	}
	r.waiting.remove(d.Path)
	inst := cache.Instance{
		Path: d.Path, Rel: d.Rel, Gen: d.Gen, Ctime: d.ID.Ctime, Seen: d.Seen,
		Key: cache.PluginKey{Type: info.Type, Name: info.Name}, Endpoint: info.Endpoint,
		Versions: info.SupportedVersions, Handler: h,
	}
	if inst.Endpoint == "" {
		inst.Endpoint = d.Path
	}
	if prev, ok := r.asw.Get(d.Path); ok && prev.Gen == d.Gen {
		inst.Standby = prev.Standby
	}
	if !r.identityOK(ctx, conn, &inst) {
		return 0
	}
	if nameKey := registrar.EscapeName(info.Name); nameKey != fileKey && !r.throttle.Admit(nameKey, d.Path) {
		r.throttled(nameKey, d.Path)
		return 0
	}
	r.asw.Put(inst)
	return r.elect(ctx, inst, conn)
}

// identityOK applies the identity policy; a rejected instance is recorded
// so that it is not retried until the socket is replaced.
func (r *reconciler) identityOK(ctx context.Context, conn *executor.Conn, inst *cache.Instance) bool {
	warn, err := socket.CheckIdentity(r.opts.IdentityPolicy,
		socket.Claim{Path: inst.Path, Rel: inst.Rel, Type: inst.Key.Type, Name: inst.Key.Name})
	if err == nil {
		return true
	}
	key := inst.Key.Type + "/" + inst.Key.Name
	if warn {
		r.rep.Warn("Plugin socket name does not carry the plugin name", key, report.EventPluginRejected, err,
			"path", inst.Path, "pluginType", inst.Key.Type, "pluginName", inst.Key.Name, "policy", r.opts.IdentityPolicy)
		return true
	}
	r.metrics.Failures.WithLabelValues(inst.Key.Type, metrics.ReasonIdentity).Inc()
	r.rep.Warn("Plugin registration rejected", key, report.EventPluginRejected, err,
		"path", inst.Path, "pluginType", inst.Key.Type, "pluginName", inst.Key.Name)
	r.notifyFailure(ctx, conn, err)
	inst.Rejected = true
	r.asw.Put(*inst)
	return false
}

func (r *reconciler) throttled(key, path string) {
	r.metrics.Throttled.Inc()
	r.rep.Info("Plugin registration throttled", key, report.EventPluginThrottled,
		"throttleKey", key, "path", path, "ratePerSecond", r.opts.ThrottleRate, "burst", r.opts.ThrottleBurst)
}

// probeFailed classifies a failed dial or GetInfo. Refused connections
// count towards stale-socket removal; anything else (timeouts, non-gRPC
// listeners, errors) is only retried, never removed. Either way the socket
// backs off, and a standby that fails lets the next one stand in.
func (r *reconciler) probeFailed(ctx context.Context, d cache.DesiredSocket, err error) time.Duration {
	if ctx.Err() != nil {
		return 0 // shutting down
	}
	switch {
	case errors.Is(err, executor.ErrGone):
		r.dsw.Forget(d.Path)
		return r.syncGone(ctx, d.Path)
	case errors.Is(err, executor.ErrRefused) && r.keepsWhenRefused(d):
		r.metrics.Failures.WithLabelValues(metrics.UnknownType, metrics.ReasonDial).Inc()
		r.rep.Debug("Registered plugin socket refused connection, kept", "path", d.Path)
		r.rep.Warn("Registered plugin socket refused connection; it stays registered until its file is removed", d.Rel,
			report.EventPluginFailed, err, "path", d.Path)
	case errors.Is(err, executor.ErrRefused):
		delay, removed, n := r.maybeRemoveStale(ctx, d)
		if removed {
			return delay
		}
		if delay > 0 {
			return r.backOff(d.Path, d.Gen, delay) // waiting out StaleGrace
		}
		if n == 1 {
			// A first refusal is normal: the file exists from bind() on,
			// but connections are accepted only after listen().
			return bindListenRetry
		}
		r.metrics.Failures.WithLabelValues(metrics.UnknownType, metrics.ReasonDial).Inc()
		r.rep.Warn("Plugin socket refused connection", d.Rel, report.EventPluginFailed, err, "path", d.Path, "refusals", n)
	default:
		r.retries.answered(d.Path)
		r.metrics.Failures.WithLabelValues(metrics.UnknownType, metrics.ReasonGetInfo).Inc()
		r.rep.Warn("Plugin did not answer GetInfo", d.Rel, report.EventPluginFailed, err, "path", d.Path)
	}
	return r.backOff(d.Path, d.Gen, r.retries.next(d.Path, d.Gen))
}

// keepsWhenRefused reports whether d's socket is registered with a handler
// that keeps it registered while it refuses connections
// (Policy.KeepRegisteredWhenRefused): such a socket is never removed as
// stale, only retried with backoff until it answers or its file goes.
func (r *reconciler) keepsWhenRefused(d cache.DesiredSocket) bool {
	inst, ok := r.asw.Get(d.Path)
	return ok && inst.Gen == d.Gen && inst.Registered && cache.PolicyOf(inst.Handler).KeepRegisteredWhenRefused
}

// maybeRemoveStale deletes the socket file once it has refused
// StaleAttempts connections over at least StaleGrace.
func (r *reconciler) maybeRemoveStale(ctx context.Context, d cache.DesiredSocket) (time.Duration, bool, int) {
	now := r.now()
	n, first := r.retries.refused(d.Path, d.Gen, now)
	if r.opts.StaleAttempts < 0 || n < r.opts.StaleAttempts {
		return 0, false, n
	}
	if wait := first.Add(r.opts.StaleGrace).Sub(now); wait > 0 {
		return wait, false, n
	}
	removed, err := r.exec.RemoveStale(d.Path, d.ID)
	if err != nil {
		r.rep.Warn("Could not remove stale plugin socket", d.Rel, report.EventPluginFailed, err, "path", d.Path)
		return 0, false, n
	}
	if !removed {
		// Replaced meanwhile: sync the new socket instead.
		r.enqueue(d.Path)
		return 0, true, n
	}
	r.metrics.StaleRemoved.Inc()
	r.rep.Info("Removed stale plugin socket", d.Rel, report.EventStaleSocketRemoved, "path", d.Path, "refusals", n)
	r.dsw.Forget(d.Path)
	return r.syncGone(ctx, d.Path), true, n
}
