package pluginwatcher

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	pwmetrics "github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/slots"
)

// TestHostileSockets: for each hostile class (hostile_test.go), 200 such
// sockets do not keep a well-behaved plugin from registering, both when
// they appear together with it (a kubelet restart with them present) and
// when they have been there for long enough to be suspect. No assertion
// is on elapsed time: "promptly" is shown by what the watcher was doing
// when the plugin registered. The registration latency itself is measured
// by BenchmarkRegisterWithHostileSockets.
func TestHostileSockets(t *testing.T) {
	checks := map[string]func(t *testing.T, w *watcher, h *recordingHandler, hs *hostileSet){
		"getinfo-after-4.9s": func(t *testing.T, w *watcher, _ *recordingHandler, _ *hostileSet) {
			// An answer within RPCTimeout is accepted: the attempts fail
			// on the type, not on GetInfo.
			eventually(t, "slow answers reach the handler lookup", func() bool {
				n, _ := testutil.GetCounterMetricValue(w.metrics.Failures.WithLabelValues(pwmetrics.UnknownType, pwmetrics.ReasonNoHandler))
				return n >= 1
			})
		},
		"stall-on-notify": func(t *testing.T, w *watcher, h *recordingHandler, _ *hostileSet) {
			// The registration stands; only the notification is retried.
			// (On a loaded machine GetInfo itself may time out at first.)
			eventually(t, "plugin that stalls on the notification registered", func() bool {
				_, ok := h.current("evil000")
				return ok
			})
			if n := h.count("deregister", "evil000"); n != 0 {
				t.Errorf("a plugin that stalls on NotifyRegistrationStatus was de-registered %d times", n)
			}
		},
		"garbage-answer": func(t *testing.T, _ *watcher, _ *recordingHandler, hs *hostileSet) {
			for _, p := range hs.paths {
				if !fileExists(p) {
					t.Fatalf("socket %s answering garbage was removed", p)
				}
			}
		},
		"bind-only": func(t *testing.T, _ *watcher, _ *recordingHandler, hs *hostileSet) {
			eventually(t, "bind-only sockets removed as stale", func() bool {
				for _, p := range hs.paths {
					if fileExists(p) {
						return false
					}
				}
				return true
			})
		},
	}
	for _, class := range hostileClasses {
		t.Run(class.name, func(t *testing.T) {
			t.Run("created-with-plugin", func(t *testing.T) {
				hostileWithRestart(t, class)
			})
			t.Run("present-before", func(t *testing.T) {
				hostilePresentBefore(t, class, checks[class.name])
			})
		})
	}
}

// hostileWithRestart: the hostile sockets and the plugin exist when the
// watcher starts, and the hostile ones are found first (walk order). The
// RPC timeout is longer than the test waits, so no hostile attempt can
// end and free capacity: the plugin registers only if there is capacity
// beside all of them. Before issue 13 its attempt queued behind 16
// workers that each waited out the timeout.
func hostileWithRestart(t *testing.T, class hostileClass) {
	dir := testDir(t)
	opts := withRegistry(Options{RPCTimeout: 30 * time.Second})
	startHostile(t, class, dir, testType, opts.RPCTimeout, hostileCount)
	good := startPlugin(t, filepath.Join(dir, "good.sock"), pluginInfo(testType, "good"))
	w := startWatcher(t, dir, opts, testType, newRecordingHandler(t))

	if s := good.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("well-behaved plugin not registered: %+v", s)
	}
	if inFlight, _, _ := w.slots.Counts(); class.stalls && inFlight < hostileCount {
		t.Errorf("%d attempts in flight when the plugin registered, want the %d stalled hostile ones", inFlight, hostileCount)
	}
}

// hostilePresentBefore: the hostile sockets have all failed once (the
// stalling ones are suspect) when the plugin appears. The in-flight limit
// is small (32, 8 for suspect sockets) so that the suspect share is full:
// the plugin must still start at once, on the reserved capacity.
func hostilePresentBefore(t *testing.T, class hostileClass, check func(*testing.T, *watcher, *recordingHandler, *hostileSet)) {
	dir := testDir(t)
	opts := fastOptions()
	opts.RPCTimeout, opts.DialTimeout = 300*time.Millisecond, 300*time.Millisecond
	opts.SuspectAfter = opts.RPCTimeout / 5 // 1 s of 5 s
	opts.MaxInFlight, opts.SuspectInFlight = 32, 8
	hs := startHostile(t, class, dir, testType, opts.RPCTimeout, hostileCount)
	h := newRecordingHandler(t)
	w := startWatcher(t, dir, opts, testType, h)
	waitHostileTried(t, w, class, hs)

	waitsBefore, _ := testutil.GetCounterMetricValue(w.metrics.Deferred.WithLabelValues(slots.Normal.String()))
	good := startPlugin(t, filepath.Join(dir, "good.sock"), pluginInfo(testType, "good"))
	if s := good.waitStatus(t); !s.PluginRegistered {
		t.Fatalf("well-behaved plugin not registered: %+v", s)
	}
	if class.stalls {
		waits, _ := testutil.GetCounterMetricValue(w.metrics.Deferred.WithLabelValues(slots.Normal.String()))
		if waits != waitsBefore {
			t.Errorf("a normal attempt waited for a slot (%v -> %v) while only suspect sockets competed", waitsBefore, waits)
		}
		if suspectWaits, _ := testutil.GetCounterMetricValue(w.metrics.Deferred.WithLabelValues(slots.Suspect.String())); suspectWaits == 0 {
			t.Error("the suspect share never filled up: the test did not exercise the split")
		}
	}
	if check != nil {
		check(t, w, h, hs)
	}
}

// waitHostileTried waits until every hostile socket has failed at least
// once: the stalling ones are then suspect; bind-only ones refused (and
// may be gone); garbage ones failed quickly.
func waitHostileTried(t *testing.T, w *watcher, class hostileClass, hs *hostileSet) {
	t.Helper()
	eventually(t, "every hostile socket tried", func() bool {
		if !class.stalls {
			n, _ := testutil.GetCounterMetricValue(w.metrics.Failures.WithLabelValues(pwmetrics.UnknownType, pwmetrics.ReasonGetInfo))
			m, _ := testutil.GetCounterMetricValue(w.metrics.Failures.WithLabelValues(pwmetrics.UnknownType, pwmetrics.ReasonDial))
			return n+m >= hostileCount
		}
		for _, p := range hs.paths {
			if c, _ := w.rec.Class(p); c != slots.Suspect {
				return false
			}
		}
		return true
	})
}
