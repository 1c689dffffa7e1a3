package pluginwatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// bindListenRetry is the delay before re-dialling a socket that refused its
// first connection.
const bindListenRetry = time.Millisecond

// reconciler compares the desired state (socket files) with the actual
// state (what the handlers know) for one socket path at a time and drives
// the executor and the handlers to converge. sync is called from attempt,
// once per path taken from a per-path work queue, so one path is never
// synced concurrently; the key gate additionally serialises handler calls
// per plugin (type, name).
type reconciler struct {
	opts     Options
	dsw      desiredStateOfWorld
	asw      actualStateOfWorld
	exec     operationExecutor
	throttle *throttler
	gate     *keyGate
	retries  *retries
	monitors *monitors
	rep      *reporter
	metrics  *watcherMetrics
	handler  func(pluginType string) (Handler, bool)
	enqueue  func(path string)
	now      func() time.Time
	// stat is lstatSocket; tests replace it with a fake file system.
	stat func(path string) (socketID, bool, error)
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
	if known && inst.gen != d.gen {
		// Replaced in place (same path, new inode): the old generation
		// leaves first, then the new one registers.
		if !r.retire(ctx, inst) {
			return 0
		}
		known = false
	}
	if known && (inst.rejected || inst.registered && inst.notified && !inst.verify) {
		return 0
	}
	if known && inst.registered {
		return r.recheck(ctx, d, inst)
	}
	return r.register(ctx, d)
}

// class returns the capacity class of path's next attempt and the socket
// generation it was decided for (0 when the socket is gone).
func (r *reconciler) class(path string) (attemptClass, uint64) {
	d, ok := r.dsw.Get(path)
	if !ok {
		return classNormal, 0
	}
	if r.retries.suspect(path, d.gen) {
		return classSuspect, d.gen
	}
	return classNormal, d.gen
}

// attempt is one sync of path in an in-flight slot. An attempt that fails
// after holding its slot for SuspectAfter or longer makes the socket
// suspect and stretches its backoff to at least the time it held the slot,
// doubled for each earlier slow failure (retries.slowFailure).
func (r *reconciler) attempt(ctx context.Context, path string, gen uint64) time.Duration {
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
	r.asw.Update(path, func(i *instance) {
		// Keep the instance out of owner election for as long.
		if i.gen == gen && i.retryAt.After(now) {
			i.retryAt = now.Add(least)
		}
	})
	r.rep.debug("Plugin socket held its slot and failed, backing off", "path", path, "held", held, "retryIn", least)
	return least
}

// current returns the desired entry for path after checking the file
// itself, so that a missed or coalesced event cannot leave stale state.
func (r *reconciler) current(path string) (desiredSocket, bool) {
	d, ok := r.dsw.Get(path)
	if !ok {
		return d, false
	}
	id, isSock, err := r.stat(path)
	if err != nil || !isSock {
		r.dsw.Forget(path)
		return desiredSocket{}, false
	}
	if id != d.id {
		r.dsw.Observe(path, d.rel, id)
		d, ok = r.dsw.Get(path)
	}
	return d, ok
}

func (r *reconciler) syncGone(ctx context.Context, path string) time.Duration {
	r.throttle.forget(path)
	r.retries.forget(path)
	if inst, ok := r.asw.Get(path); ok {
		r.retire(ctx, inst)
	}
	return 0
}

// retire removes an instance whose socket went away or was replaced. Only
// the registered owner of a plugin key causes a DeRegister, with its own
// endpoint; then the newest remaining socket of that plugin is queued to
// take over. It returns false if the key is busy (the path is re-queued).
func (r *reconciler) retire(ctx context.Context, inst instance) bool {
	if !r.gate.tryLock(inst.key, inst.path) {
		return false
	}
	defer r.gate.unlock(inst.key)
	if cur, ok := r.asw.Get(inst.path); ok && cur.registered {
		r.deregister(ctx, cur)
	}
	r.monitors.stop(inst.path)
	r.asw.Delete(inst.path)
	if next, ok := r.asw.Elect(inst.key, r.now()); ok {
		r.enqueue(next.path)
	}
	return true
}

// register probes the socket, checks it and runs the owner election.
func (r *reconciler) register(ctx context.Context, d desiredSocket) time.Duration {
	fileKey := throttleKey(d.rel)
	if !r.throttle.admit(fileKey, d.path) {
		r.throttled(fileKey, d.path)
		return 0
	}
	info, conn, err := r.exec.Probe(ctx, d.path)
	if err != nil {
		return r.probeFailed(ctx, d, err)
	}
	defer conn.Close()
	r.retries.answered(d.path)

	h, ok := r.handler(info.Type)
	if !ok {
		err := fmt.Errorf("no handler for plugin type %q", info.Type)
		return r.failed(ctx, conn, d.path, d.gen, unknownType, info.Name, reasonNoHandler, err)
	}
	inst := instance{
		path: d.path, rel: d.rel, gen: d.gen, ctime: d.id.ctime, seen: d.seen,
		key: pluginKey{typ: info.Type, name: info.Name}, endpoint: info.Endpoint,
		versions: info.SupportedVersions, handler: h,
	}
	if inst.endpoint == "" {
		inst.endpoint = d.path
	}
	if prev, ok := r.asw.Get(d.path); ok && prev.gen == d.gen {
		inst.standby = prev.standby
	}
	if !r.identityOK(ctx, conn, &inst) {
		return 0
	}
	if nameKey := EscapeName(info.Name); nameKey != fileKey && !r.throttle.admit(nameKey, d.path) {
		r.throttled(nameKey, d.path)
		return 0
	}
	r.asw.Put(inst)
	return r.elect(ctx, inst, conn)
}

// identityOK applies the identity policy; a rejected instance is recorded
// so that it is not retried until the socket is replaced.
func (r *reconciler) identityOK(ctx context.Context, conn *pluginConn, inst *instance) bool {
	warn, err := checkIdentity(r.opts.IdentityPolicy, inst.rel, inst.key.name)
	if err == nil {
		return true
	}
	key := inst.key.typ + "/" + inst.key.name
	if warn {
		r.rep.warn("Plugin socket name does not carry the plugin name", key, EventPluginRejected, err,
			"path", inst.path, "pluginType", inst.key.typ, "pluginName", inst.key.name, "policy", r.opts.IdentityPolicy)
		return true
	}
	r.metrics.failures.WithLabelValues(inst.key.typ, reasonIdentity).Inc()
	r.rep.warn("Plugin registration rejected", key, EventPluginRejected, err,
		"path", inst.path, "pluginType", inst.key.typ, "pluginName", inst.key.name)
	r.notifyFailure(ctx, conn, err)
	inst.rejected = true
	r.asw.Put(*inst)
	return false
}

func (r *reconciler) throttled(key, path string) {
	r.metrics.throttled.Inc()
	r.rep.info("Plugin registration throttled", key, EventPluginThrottled,
		"throttleKey", key, "path", path, "ratePerSecond", r.opts.ThrottleRate, "burst", r.opts.ThrottleBurst)
}

// probeFailed classifies a failed dial or GetInfo. Refused connections
// count towards stale-socket removal; anything else (timeouts, non-gRPC
// listeners, errors) is only retried, never removed. Either way the socket
// backs off, and a standby that fails lets the next one stand in.
func (r *reconciler) probeFailed(ctx context.Context, d desiredSocket, err error) time.Duration {
	if ctx.Err() != nil {
		return 0 // shutting down
	}
	switch {
	case errors.Is(err, errGone):
		r.dsw.Forget(d.path)
		return r.syncGone(ctx, d.path)
	case errors.Is(err, errRefused):
		delay, removed, n := r.maybeRemoveStale(ctx, d)
		if removed {
			return delay
		}
		if delay > 0 {
			return r.backOff(d.path, d.gen, delay) // waiting out StaleGrace
		}
		if n == 1 {
			// A first refusal is normal: the file exists from bind() on,
			// but connections are accepted only after listen().
			return bindListenRetry
		}
		r.metrics.failures.WithLabelValues(unknownType, reasonDial).Inc()
		r.rep.warn("Plugin socket refused connection", d.rel, EventPluginFailed, err, "path", d.path, "refusals", n)
	default:
		r.retries.answered(d.path)
		r.metrics.failures.WithLabelValues(unknownType, reasonGetInfo).Inc()
		r.rep.warn("Plugin did not answer GetInfo", d.rel, EventPluginFailed, err, "path", d.path)
	}
	return r.backOff(d.path, d.gen, r.retries.next(d.path, d.gen))
}

// maybeRemoveStale deletes the socket file once it has refused
// StaleAttempts connections over at least StaleGrace.
func (r *reconciler) maybeRemoveStale(ctx context.Context, d desiredSocket) (time.Duration, bool, int) {
	now := r.now()
	n, first := r.retries.refused(d.path, d.gen, now)
	if r.opts.StaleAttempts < 0 || n < r.opts.StaleAttempts {
		return 0, false, n
	}
	if wait := first.Add(r.opts.StaleGrace).Sub(now); wait > 0 {
		return wait, false, n
	}
	removed, err := r.exec.RemoveStale(d.path, d.id)
	if err != nil {
		r.rep.warn("Could not remove stale plugin socket", d.rel, EventPluginFailed, err, "path", d.path)
		return 0, false, n
	}
	if !removed {
		// Replaced meanwhile: sync the new socket instead.
		r.enqueue(d.path)
		return 0, true, n
	}
	r.metrics.staleRemoved.Inc()
	r.rep.info("Removed stale plugin socket", d.rel, EventStaleSocketRemoved, "path", d.path, "refusals", n)
	r.dsw.Forget(d.path)
	return r.syncGone(ctx, d.path), true, n
}
