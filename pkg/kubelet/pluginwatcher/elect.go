package pluginwatcher

import (
	"context"
	"fmt"
	"time"
)

// elect makes inst the registered owner of its plugin key if it is the
// newest live socket of that plugin. An older socket stays a standby: it is
// neither registered nor notified, and takes over if the newer one leaves.
// The current owner is de-registered only once inst has passed validation,
// so a newer socket that keeps failing never takes the working one down.
func (r *reconciler) elect(ctx context.Context, inst instance, conn *pluginConn) time.Duration {
	if !r.gate.tryLock(inst.key, inst.path) {
		return 0
	}
	defer r.gate.unlock(inst.key)
	winner, ok := r.asw.Elect(inst.key, r.now())
	if !ok || winner.path != inst.path {
		r.rep.debug("Plugin socket is a standby for a newer socket", "path", inst.path, "pluginName", inst.key.name)
		r.asw.Update(inst.path, func(i *instance) { i.standby = true })
		if owner, has := r.asw.Owner(inst.key); ok && (!has || owner.path != winner.path) {
			r.enqueue(winner.path)
		}
		return 0
	}
	if owner, has := r.asw.Owner(inst.key); has && owner.path != inst.path {
		// Validate the newer socket before the working one is touched; see
		// ReplacementValidator for the order.
		if err := r.validateReplacement(ctx, inst, owner); err != nil {
			return r.failed(ctx, conn, inst.path, inst.gen, inst.key.typ, inst.key.name, reasonValidate, err)
		}
		r.deregister(ctx, owner)
	}
	if reason, err := r.callHandler(ctx, inst); err != nil {
		return r.failed(ctx, conn, inst.path, inst.gen, inst.key.typ, inst.key.name, reason, err)
	}
	r.asw.Update(inst.path, func(i *instance) { i.registered = true })
	r.registered(inst)
	return r.notifySuccess(ctx, conn, inst)
}

// validateReplacement checks inst, a newer socket of a plugin that owner
// serves, while owner is still registered.
func (r *reconciler) validateReplacement(ctx context.Context, inst, owner instance) error {
	n := inst.key.name
	var err error
	if rv, ok := inst.handler.(ReplacementValidator); ok {
		err = rv.ValidateReplacement(ctx, n, inst.endpoint, inst.versions)
	} else {
		err = inst.handler.ValidatePlugin(ctx, n, inst.endpoint, inst.versions)
	}
	if err != nil {
		return fmt.Errorf("plugin validation failed, socket %s stays registered: %w", owner.path, err)
	}
	return nil
}

// callHandler runs the handler's state machine: validate (which includes
// version negotiation), then register.
func (r *reconciler) callHandler(ctx context.Context, inst instance) (string, error) {
	n := inst.key.name
	if err := inst.handler.ValidatePlugin(ctx, n, inst.endpoint, inst.versions); err != nil {
		return reasonValidate, fmt.Errorf("plugin validation failed: %w", err)
	}
	if err := inst.handler.RegisterPlugin(ctx, n, inst.endpoint, inst.versions, r.opts.PluginClientTimeout); err != nil {
		return reasonRegister, fmt.Errorf("plugin registration failed: %w", err)
	}
	return "", nil
}

func (r *reconciler) registered(inst instance) {
	r.metrics.registrations.WithLabelValues(inst.key.typ).Inc()
	if !inst.standby {
		r.metrics.latency.WithLabelValues(inst.key.typ).Observe(r.now().Sub(inst.seen).Seconds())
	}
	r.updateGauge()
	r.rep.success("Plugin registered", inst.key.typ+"/"+inst.key.name, EventPluginRegistered,
		"pluginType", inst.key.typ, "pluginName", inst.key.name, "endpoint", inst.endpoint,
		"path", inst.path, "versions", inst.versions)
}

func (r *reconciler) deregister(ctx context.Context, owner instance) {
	r.monitors.stop(owner.path)
	owner.handler.DeRegisterPlugin(ctx, owner.key.name, owner.endpoint)
	r.metrics.deregistrations.WithLabelValues(owner.key.typ).Inc()
	r.asw.Update(owner.path, func(i *instance) { i.registered, i.notified = false, false })
	r.updateGauge()
	r.rep.info("Plugin deregistered", owner.key.typ+"/"+owner.key.name, EventPluginDeregistered,
		"pluginType", owner.key.typ, "pluginName", owner.key.name, "endpoint", owner.endpoint, "path", owner.path)
}

func (r *reconciler) updateGauge() {
	r.gaugeMu.Lock()
	defer r.gaugeMu.Unlock()
	counts := r.asw.RegisteredByType()
	r.metrics.registered.Reset()
	for typ, n := range counts {
		r.metrics.registered.WithLabelValues(typ).Set(float64(n))
	}
}

// notifySuccess tells the plugin it is registered. If that fails the
// registration stands and only the notification is retried with backoff.
func (r *reconciler) notifySuccess(ctx context.Context, conn *pluginConn, inst instance) time.Duration {
	if err := r.exec.Notify(ctx, conn, true, ""); err != nil {
		if ctx.Err() != nil {
			return 0 // shutting down
		}
		r.metrics.failures.WithLabelValues(inst.key.typ, reasonNotify).Inc()
		r.rep.warn("Could not notify plugin of its registration", inst.key.typ+"/"+inst.key.name, EventPluginFailed, err,
			"path", inst.path, "pluginName", inst.key.name)
		return r.retries.next(inst.path, inst.gen)
	}
	r.asw.Update(inst.path, func(i *instance) { i.notified, i.verify = true, false })
	r.retries.forget(inst.path)
	r.monitors.watch(ctx, inst.path, conn)
	return 0
}

// recheck contacts a registered plugin again: to deliver a notification
// that failed, or to check a plugin whose connection dropped. A plugin that
// now refuses connections goes the stale-socket way; a slow one stays
// registered and is retried.
func (r *reconciler) recheck(ctx context.Context, d desiredSocket, inst instance) time.Duration {
	_, conn, err := r.exec.Probe(ctx, inst.path)
	if err != nil {
		return r.probeFailed(ctx, d, err)
	}
	defer conn.Close()
	r.retries.answered(inst.path)
	if !inst.notified {
		return r.notifySuccess(ctx, conn, inst)
	}
	r.asw.Update(inst.path, func(i *instance) { i.verify = false })
	r.monitors.watch(ctx, inst.path, conn)
	return 0
}

// connectionDropped queues a liveness check of a registered plugin.
func (r *reconciler) connectionDropped(path string) {
	registered := false
	r.asw.Update(path, func(i *instance) {
		if i.registered {
			i.verify, registered = true, true
		}
	})
	if registered {
		r.enqueue(path)
	}
}

// failed records a failed attempt: the plugin is told why and the socket
// backs off (see backOff).
func (r *reconciler) failed(ctx context.Context, conn *pluginConn, path string, gen uint64, typ, name, reason string, err error) time.Duration {
	if ctx.Err() != nil {
		return 0 // shutting down
	}
	delay := r.retries.next(path, gen)
	r.metrics.failures.WithLabelValues(typ, reason).Inc()
	r.rep.warn("Plugin registration failed", typ+"/"+name, EventPluginFailed, err,
		"path", path, "pluginType", typ, "pluginName", name, "reason", reason, "retryIn", delay)
	r.notifyFailure(ctx, conn, err)
	return r.backOff(path, gen, delay)
}

// backOff returns delay, the wait before the next attempt on (path, gen).
// Meanwhile an instance known from an earlier probe is excluded from owner
// election, unless it is registered (a registered plugin that answers
// slowly stays registered), and the newest other socket of its plugin, if
// any, is queued to stand in.
func (r *reconciler) backOff(path string, gen uint64, delay time.Duration) time.Duration {
	now := r.now()
	var key *pluginKey
	r.asw.Update(path, func(i *instance) {
		if i.gen == gen && !i.registered {
			i.retryAt = now.Add(delay)
			key = &i.key
		}
	})
	if key != nil {
		if next, ok := r.asw.Elect(*key, now); ok {
			r.enqueue(next.path)
		}
	}
	return delay
}

func (r *reconciler) notifyFailure(ctx context.Context, conn *pluginConn, cause error) {
	// Some plugins (the DRA helper) answer a negative status with an
	// error; that is expected and not a reason to retry.
	if err := r.exec.Notify(ctx, conn, false, cause.Error()); err != nil {
		r.rep.debug("Plugin answered negative registration status with an error", "err", err)
	}
}
