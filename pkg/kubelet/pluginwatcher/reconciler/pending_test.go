package reconciler

import (
	"testing"
	"time"

	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
)

// TestReconcilerHandlerAddedLater: a plugin whose type has no handler yet
// is told so and backs off; when the handler is added (HandlerAdded) it is
// retried at once instead of at its next retry, so that a DRA driver that
// registers before the kubelet's DRA manager exists is registered as soon
// as it does, whatever its backoff has grown to.
func TestReconcilerHandlerAddedLater(t *testing.T) {
	runReconcilerCases(t, handlerAddedCases)
}

var handlerAddedCases = []reconcilerCase{{
	name: "pending handler: the plugin is refused and backs off; the handler arrives and it registers at once",
	opts: Config{RetryBase: time.Minute, RetryMax: time.Minute},
	steps: []step{{
		do:   []action{withoutHandler("not started yet"), create(sock{"eta.1", 1})},
		want: []string{"status eta.1 failed", "retry eta.1 1m0s"},
	}, {
		do:         []action{addHandler()},
		want:       []string{"validate eta.1", "register eta.1", "status eta.1 ok"},
		registered: []string{"eta.1"},
	}, {
		wait:       time.Minute, // the retry falls due: nothing to do
		registered: []string{"eta.1"},
	}},
}, {
	name: "no handler and none expected: the same, once one is added",
	opts: Config{RetryBase: time.Minute, RetryMax: time.Minute},
	steps: []step{{
		do:   []action{withoutHandler(""), create(sock{"eta.1", 1}, sock{"zeta.1", 1})},
		want: []string{"status eta.1 failed", "retry eta.1 1m0s", "status zeta.1 failed", "retry zeta.1 1m0s"},
	}, {
		do: []action{addHandler()},
		want: []string{
			"validate eta.1", "register eta.1", "status eta.1 ok",
			"validate zeta.1", "register zeta.1", "status zeta.1 ok",
		},
		registered: []string{"eta.1", "zeta.1"},
	}},
}, {
	name: "a socket that goes while it waits is forgotten: adding the handler queues nothing",
	opts: Config{RetryBase: time.Minute, RetryMax: time.Minute},
	steps: []step{{
		do:   []action{withoutHandler("not started yet"), create(sock{"eta.1", 1})},
		want: []string{"status eta.1 failed", "retry eta.1 1m0s"},
	}, {
		do: []action{remove("eta.1"), addHandler()},
	}},
}}

// TestReconcilerPendingHandlerMetric: failures of a type whose handler is
// pending count as handler_pending under the type's own label; those of an
// unknown type as no_handler under "unknown".
func TestReconcilerPendingHandlerMetric(t *testing.T) {
	for name, tc := range map[string]struct {
		reason            string
		wantType, wantWhy string
	}{
		"expected type": {reason: "not started yet", wantType: testType, wantWhy: metrics.ReasonHandlerPending},
		"unknown type":  {wantType: metrics.UnknownType, wantWhy: metrics.ReasonNoHandler},
	} {
		t.Run(name, func(t *testing.T) {
			tb := newTestbed(t, Config{}, newScriptedHandler(false), nil)
			tb.rec.metrics.Register(basemetrics.NewKubeRegistry())
			withoutHandler(tc.reason)(tb)
			create(sock{"eta.1", 1})(tb)
			tb.run(0)
			n, err := testutil.GetCounterMetricValue(tb.rec.metrics.Failures.WithLabelValues(tc.wantType, tc.wantWhy))
			if err != nil || n != 1 {
				t.Errorf("registration_failures_total{%s,%s} = %v (%v), want 1", tc.wantType, tc.wantWhy, n, err)
			}
		})
	}
}

// withoutHandler removes the handler of testType; a non-empty reason
// declares it pending.
func withoutHandler(reason string) action {
	return func(tb *testbed) {
		delete(tb.handlers, testType)
		if reason != "" {
			tb.pending[testType] = reason
		}
	}
}

// addHandler gives testType its handler back, as the watcher's AddHandler
// does.
func addHandler() action {
	return func(tb *testbed) {
		tb.handlers[testType] = tb.h
		delete(tb.pending, testType)
		tb.rec.HandlerAdded(testType)
	}
}
