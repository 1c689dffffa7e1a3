package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor/executortest"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/slots"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/throttle"
)

// Plugin types of the tests: testType has a handler, hostileType none.
const (
	testType    = "TestPlugin"
	hostileType = "HostilePlugin"
)

func pluginInfo(typ, name string, versions ...string) *registerapi.PluginInfo {
	if len(versions) == 0 {
		versions = []string{"v1"}
	}
	return &registerapi.PluginInfo{Type: typ, Name: name, SupportedVersions: versions}
}

// fakeClock is advanced only by fakeExec, by the time each call "took".
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeExec stands in for the network: each call takes the configured time
// on the fake clock and returns the configured result.
type fakeExec struct {
	clock      *fakeClock
	probeTook  time.Duration
	info       *registerapi.PluginInfo
	probeErr   error
	notifyTook time.Duration
	notifyErr  error
}

var _ executor.Executor = &fakeExec{}

func (f *fakeExec) Probe(context.Context, string) (*registerapi.PluginInfo, *executor.Conn, error) {
	f.clock.advance(f.probeTook)
	if f.probeErr != nil {
		return nil, nil, f.probeErr
	}
	// A connection that was never opened: the fake monitor only records
	// it.
	return f.info, &executor.Conn{}, nil
}

func (f *fakeExec) Notify(context.Context, *executor.Conn, bool, string) error {
	f.clock.advance(f.notifyTook)
	return f.notifyErr
}

func (f *fakeExec) RemoveStale(string, socket.ID) (bool, error) { return false, nil }

// TestAttemptSuspectRule: with the default options (RPCTimeout 5 s,
// SuspectAfter 1 s, RetryBase 10 ms), an attempt that fails after holding
// its slot for SuspectAfter or longer makes its socket suspect and backs
// off for at least that long, doubling; quick failures keep the ordinary
// backoff and the normal class. Time is a fake clock moved by the fake
// network.
func TestAttemptSuspectRule(t *testing.T) {
	for name, tc := range attemptCases() {
		t.Run(name, func(t *testing.T) {
			testAttempts(t, tc)
		})
	}
}

// attemptCase is what the fake network does on each attempt, and the
// delays, class and registration that must follow.
type attemptCase struct {
	exec        fakeExec
	failHandler bool
	wantDelays  []time.Duration
	wantSuspect bool
	wantReg     bool
}

func attemptCases() map[string]attemptCase {
	timeout := fmt.Errorf("GetInfo: %w", context.DeadlineExceeded)
	refused := fmt.Errorf("dial: %w", executor.ErrRefused)
	ms := time.Millisecond
	return map[string]attemptCase{
		"accept-never-answer: timeouts back off from the time held": {
			exec:       fakeExec{probeTook: 5 * time.Second, probeErr: timeout},
			wantDelays: []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second}, wantSuspect: true,
		},
		"garbage-answer: quick failures keep the ordinary backoff": {
			exec:       fakeExec{probeTook: 2 * ms, probeErr: errors.New("connection closed")},
			wantDelays: []time.Duration{10 * ms, 20 * ms, 40 * ms},
		},
		"bind-only: refusals are never suspect": {
			exec:       fakeExec{probeErr: refused},
			wantDelays: []time.Duration{bindListenRetry, 10 * ms, 20 * ms},
		},
		"getinfo-after-4.9s with an unknown type: accepted answer, then suspect": {
			exec:       fakeExec{probeTook: 4900 * ms, info: pluginInfo(hostileType, "h")},
			wantDelays: []time.Duration{4900 * ms, 9800 * ms, 19600 * ms}, wantSuspect: true,
		},
		"getinfo-after-4.9s with a handled type: registered, not suspect": {
			exec:       fakeExec{probeTook: 4900 * ms, info: pluginInfo(testType, "h")},
			wantDelays: []time.Duration{0}, wantReg: true,
		},
		"stall-on-notify: registration stands, notification backs off": {
			exec:       fakeExec{info: pluginInfo(testType, "h"), notifyTook: 5 * time.Second, notifyErr: timeout},
			wantDelays: []time.Duration{5 * time.Second, 10 * time.Second}, wantSuspect: true, wantReg: true,
		},
		"quick handler failure: ordinary backoff": {
			exec:        fakeExec{probeTook: ms, info: pluginInfo(testType, "h")},
			failHandler: true,
			wantDelays:  []time.Duration{10 * ms, 20 * ms},
		},
	}
}

// testAttempts runs len(tc.wantDelays) attempts, each when the previous
// one's delay has passed on the fake clock.
func testAttempts(t *testing.T, tc attemptCase) {
	r, path := newAttemptReconciler(t, &tc.exec, tc.failHandler)
	_, ctx := ktesting.NewTestContext(t)
	var got []time.Duration
	for range tc.wantDelays {
		_, gen := r.Class(path)
		delay := r.Attempt(ctx, path, gen)
		got = append(got, delay)
		tc.exec.clock.advance(delay) // the retry comes when it is due
	}
	if !slices.Equal(got, tc.wantDelays) {
		t.Errorf("delays %v, want %v", got, tc.wantDelays)
	}
	if c, _ := r.Class(path); (c == slots.Suspect) != tc.wantSuspect {
		t.Errorf("class %v, want suspect=%v", c, tc.wantSuspect)
	}
	if inst, _ := r.asw.Get(path); inst.Registered != tc.wantReg {
		t.Errorf("registered = %v, want %v", inst.Registered, tc.wantReg)
	}
	d, _ := r.dsw.Get(path)
	r.dsw.Observe(path, d.Rel, socket.ID{Ino: d.ID.Ino + 1})
	if c, _ := r.Class(path); c != slots.Normal {
		t.Errorf("a replaced socket starts in class %v, want normal", c)
	}
}

// attemptHandler accepts every plugin; with failRegister its
// RegisterPlugin fails.
type attemptHandler struct {
	failRegister bool
}

func (attemptHandler) ValidatePlugin(context.Context, string, string, []string) error { return nil }

func (h attemptHandler) RegisterPlugin(context.Context, string, string, []string, *time.Duration) error {
	if h.failRegister {
		return errors.New("consumer not ready")
	}
	return nil
}

func (attemptHandler) DeRegisterPlugin(context.Context, string, string) {}

// newAttemptReconciler returns a reconciler with the watcher's default
// options that talks to exec, reads exec's fake clock and knows one socket,
// whose path it returns; the socket file exists only in its fake stat.
func newAttemptReconciler(t *testing.T, exec *fakeExec, failHandler bool) (*reconciler, string) {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	rep := report.New(report.Config{Interval: 10 * time.Second, Budget: 10})
	rep.SetLogger(logger)
	exec.clock = &fakeClock{t: time.Unix(1_700_000_000, 0)}
	const path = "/plugins/h.sock"
	id := socket.ID{Ino: 1, Ctime: exec.clock.now().UnixNano()}
	var handler cache.Handler = attemptHandler{failRegister: failHandler}
	r := newReconciler(withDefaults(Config{}), Dependencies{
		DesiredState: cache.NewDesiredStateOfWorld(nil),
		ActualState:  cache.NewActualStateOfWorld(),
		Executor:     exec,
		Monitor:      executortest.NewFakeMonitor(),
		Throttle:     throttle.New(1, 5, func(string) {}, nil),
		Reporter:     rep,
		Metrics:      metrics.New(),
		Handler: func(typ string) (cache.Handler, bool) {
			return handler, typ == testType
		},
		Enqueue: func(string) {},
		Now:     exec.clock.now,
		Stat: func(string) (socket.ID, bool, error) {
			return id, true, nil
		},
	})
	r.retries.jitter = 0 // the cases check exact delays
	r.dsw.Observe(path, "h.sock", id)
	return r, path
}
