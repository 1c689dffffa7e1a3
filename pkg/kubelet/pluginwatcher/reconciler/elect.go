package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
)

// elect makes inst the registered owner of its plugin key if it is the
// newest live socket of that plugin. An older socket stays a standby: it is
// neither registered nor notified, and takes over if the newer one leaves.
// The current owner is de-registered only once inst has passed validation,
// so a newer socket that keeps failing never takes the working one down.
func (r *reconciler) elect(ctx context.Context, inst cache.Instance, conn *executor.Conn) time.Duration {
	if !r.gate.tryLock(inst.Key, inst.Path) {
		return 0
	}
	defer r.gate.unlock(inst.Key)
	if cache.PolicyOf(inst.Handler).AllInstances {
		return r.registerInstance(ctx, inst, conn)
	}
	winner, ok := r.asw.Elect(inst.Key, r.now())
	if !ok || winner.Path != inst.Path {
		r.rep.Debug("Plugin socket is a standby for a newer socket", "path", inst.Path, "pluginName", inst.Key.Name)
		r.asw.Update(inst.Path, func(i *cache.Instance) { i.Standby = true })
		if owner, has := r.asw.Owner(inst.Key); ok && (!has || owner.Path != winner.Path) {
			r.enqueue(winner.Path)
		}
		return 0
	}
	if owner, has := r.asw.Owner(inst.Key); has && owner.Path != inst.Path {
		// Validate the newer socket before the working one is touched; see
		// ReplacementValidator for the order.
		if err := r.validateReplacement(ctx, inst, owner); err != nil {
			return r.failed(ctx, conn, inst.Path, inst.Gen, inst.Key.Type, inst.Key.Name, metrics.ReasonValidate, err)
		}
		r.deregister(ctx, owner)
	}
	if reason, err := r.callHandler(ctx, inst); err != nil {
		return r.failed(ctx, conn, inst.Path, inst.Gen, inst.Key.Type, inst.Key.Name, reason, err)
	}
	r.asw.Update(inst.Path, func(i *cache.Instance) { i.Registered = true })
	r.registered(inst)
	return r.notifySuccess(ctx, conn, inst)
}

// registerInstance registers inst beside the other registered instances
// of its plugin, for a handler whose consumer keeps them all
// (Policy.AllInstances): nothing is de-registered, and the instance
// registered last is the newest the consumer knows. An endpoint that
// another registered socket of the plugin already claims is refused, so
// that one instance cannot take over another's (upstream's device manager
// would drop both).
func (r *reconciler) registerInstance(ctx context.Context, inst cache.Instance, conn *executor.Conn) time.Duration {
	for _, other := range r.asw.Registered(inst.Key) {
		if other.Path != inst.Path && other.Endpoint == inst.Endpoint {
			err := fmt.Errorf("endpoint %s of %s is already registered by socket %s", inst.Endpoint, inst.Key.Name, other.Path)
			return r.failed(ctx, conn, inst.Path, inst.Gen, inst.Key.Type, inst.Key.Name, metrics.ReasonValidate, err)
		}
	}
	if reason, err := r.callHandler(ctx, inst); err != nil {
		return r.failed(ctx, conn, inst.Path, inst.Gen, inst.Key.Type, inst.Key.Name, reason, err)
	}
	r.asw.Update(inst.Path, func(i *cache.Instance) { i.Registered, i.Standby = true, false })
	r.registered(inst)
	return r.notifySuccess(ctx, conn, inst)
}

// validateReplacement checks inst, a newer socket of a plugin that owner
// serves, while owner is still registered.
func (r *reconciler) validateReplacement(ctx context.Context, inst, owner cache.Instance) error {
	n := inst.Key.Name
	var err error
	if rv, ok := inst.Handler.(cache.ReplacementValidator); ok {
		err = rv.ValidateReplacement(ctx, n, inst.Endpoint, inst.Versions)
	} else {
		err = inst.Handler.ValidatePlugin(ctx, n, inst.Endpoint, inst.Versions)
	}
	if err != nil {
		return fmt.Errorf("plugin validation failed, socket %s stays registered: %w", owner.Path, err)
	}
	return nil
}

// callHandler runs the handler's state machine: validate (which includes
// version negotiation), then register.
func (r *reconciler) callHandler(ctx context.Context, inst cache.Instance) (string, error) {
	n := inst.Key.Name
	if err := inst.Handler.ValidatePlugin(ctx, n, inst.Endpoint, inst.Versions); err != nil {
		return metrics.ReasonValidate, fmt.Errorf("plugin validation failed: %w", err)
	}
	if err := inst.Handler.RegisterPlugin(ctx, n, inst.Endpoint, inst.Versions, r.opts.PluginClientTimeout); err != nil {
		return metrics.ReasonRegister, fmt.Errorf("plugin registration failed: %w", err)
	}
	return "", nil
}

func (r *reconciler) registered(inst cache.Instance) {
	r.metrics.Registrations.WithLabelValues(inst.Key.Type).Inc()
	if !inst.Standby {
		r.metrics.Latency.WithLabelValues(inst.Key.Type).Observe(r.now().Sub(inst.Seen).Seconds())
	}
	r.updateGauge()
	r.rep.Success("Plugin registered", inst.Key.Type+"/"+inst.Key.Name, report.EventPluginRegistered,
		"pluginType", inst.Key.Type, "pluginName", inst.Key.Name, "endpoint", inst.Endpoint,
		"path", inst.Path, "versions", inst.Versions)
}

func (r *reconciler) deregister(ctx context.Context, owner cache.Instance) {
	r.monitors.Stop(owner.Path)
	owner.Handler.DeRegisterPlugin(ctx, owner.Key.Name, owner.Endpoint)
	r.metrics.Deregistrations.WithLabelValues(owner.Key.Type).Inc()
	r.asw.Update(owner.Path, func(i *cache.Instance) { i.Registered, i.Notified = false, false })
	r.updateGauge()
	r.rep.Info("Plugin deregistered", owner.Key.Type+"/"+owner.Key.Name, report.EventPluginDeregistered,
		"pluginType", owner.Key.Type, "pluginName", owner.Key.Name, "endpoint", owner.Endpoint, "path", owner.Path)
}

func (r *reconciler) updateGauge() {
	r.gaugeMu.Lock()
	defer r.gaugeMu.Unlock()
	counts := r.asw.RegisteredByType()
	r.metrics.Registered.Reset()
	for typ, n := range counts {
		r.metrics.Registered.WithLabelValues(typ).Set(float64(n))
	}
}

// notifySuccess tells the plugin it is registered. If that fails the
// registration stands and only the notification is retried with backoff.
func (r *reconciler) notifySuccess(ctx context.Context, conn *executor.Conn, inst cache.Instance) time.Duration {
	if err := r.exec.Notify(ctx, conn, true, ""); err != nil {
		if ctx.Err() != nil {
			return 0 // shutting down
		}
		r.metrics.Failures.WithLabelValues(inst.Key.Type, metrics.ReasonNotify).Inc()
		r.rep.Warn("Could not notify plugin of its registration", inst.Key.Type+"/"+inst.Key.Name, report.EventPluginFailed, err,
			"path", inst.Path, "pluginName", inst.Key.Name)
		return r.retries.next(inst.Path, inst.Gen)
	}
	r.asw.Update(inst.Path, func(i *cache.Instance) { i.Notified, i.Verify = true, false })
	r.retries.forget(inst.Path)
	r.monitors.Watch(ctx, inst.Path, conn)
	return 0
}

// recheck contacts a registered plugin again: to deliver a notification
// that failed, or to check a plugin whose connection dropped. A plugin that
// now refuses connections goes the stale-socket way; a slow one stays
// registered and is retried.
func (r *reconciler) recheck(ctx context.Context, d cache.DesiredSocket, inst cache.Instance) time.Duration {
	_, conn, err := r.exec.Probe(ctx, inst.Path)
	if err != nil {
		return r.probeFailed(ctx, d, err)
	}
	defer conn.Close()
	r.retries.answered(inst.Path)
	if !inst.Notified {
		return r.notifySuccess(ctx, conn, inst)
	}
	r.asw.Update(inst.Path, func(i *cache.Instance) { i.Verify = false })
	r.monitors.Watch(ctx, inst.Path, conn)
	return 0
}

// ConnectionDropped implements Reconciler.
func (r *reconciler) ConnectionDropped(path string) {
	registered := false
	r.asw.Update(path, func(i *cache.Instance) {
		if i.Registered {
			i.Verify, registered = true, true
		}
	})
	if registered {
		r.enqueue(path)
	}
}

// failed records a failed attempt: the plugin is told why and the socket
// backs off (see backOff).
func (r *reconciler) failed(ctx context.Context, conn *executor.Conn, path string, gen uint64, typ, name, reason string, err error) time.Duration {
	if ctx.Err() != nil {
		return 0 // shutting down
	}
	delay := r.retries.next(path, gen)
	r.metrics.Failures.WithLabelValues(typ, reason).Inc()
	r.rep.Warn("Plugin registration failed", typ+"/"+name, report.EventPluginFailed, err,
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
	var key *cache.PluginKey
	r.asw.Update(path, func(i *cache.Instance) {
		if i.Gen == gen && !i.Registered {
			i.RetryAt = now.Add(delay)
			key = &i.Key
		}
	})
	if key != nil {
		if next, ok := r.asw.Elect(*key, now); ok {
			r.enqueue(next.Path)
		}
	}
	return delay
}

func (r *reconciler) notifyFailure(ctx context.Context, conn *executor.Conn, cause error) {
	// Some plugins (the DRA helper) answer a negative status with an
	// error; that is expected and not a reason to retry.
	if err := r.exec.Notify(ctx, conn, false, cause.Error()); err != nil {
		r.rep.Debug("Plugin answered negative registration status with an error", "err", err)
	}
}
