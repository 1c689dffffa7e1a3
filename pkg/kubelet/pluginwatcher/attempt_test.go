package pluginwatcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

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

var _ operationExecutor = &fakeExec{}

func (f *fakeExec) Probe(context.Context, string) (*registerapi.PluginInfo, *pluginConn, error) {
	f.clock.advance(f.probeTook)
	if f.probeErr != nil {
		return nil, nil, f.probeErr
	}
	// A lazy client that never connects: the monitor sees it not READY
	// and only queues a liveness check.
	cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return f.info, &pluginConn{cc: cc, client: registerapi.NewRegistrationClient(cc)}, nil
}

func (f *fakeExec) Notify(context.Context, *pluginConn, bool, string) error {
	f.clock.advance(f.notifyTook)
	return f.notifyErr
}

func (f *fakeExec) RemoveStale(string, socketID) (bool, error) { return false, nil }

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
	refused := fmt.Errorf("dial: %w", errRefused)
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
	w, path := newAttemptWatcher(t, &tc.exec, tc.failHandler)
	logger, ctx := ktesting.NewTestContext(t)
	w.rep.setLogger(logger)
	var got []time.Duration
	for range tc.wantDelays {
		_, gen := w.rec.class(path)
		delay := w.rec.attempt(ctx, path, gen)
		got = append(got, delay)
		tc.exec.clock.advance(delay) // the retry comes when it is due
	}
	if !slices.Equal(got, tc.wantDelays) {
		t.Errorf("delays %v, want %v", got, tc.wantDelays)
	}
	if c, _ := w.rec.class(path); (c == classSuspect) != tc.wantSuspect {
		t.Errorf("class %v, want suspect=%v", c, tc.wantSuspect)
	}
	if inst, _ := w.asw.Get(path); inst.registered != tc.wantReg {
		t.Errorf("registered = %v, want %v", inst.registered, tc.wantReg)
	}
	d, _ := w.dsw.Get(path)
	w.dsw.Observe(path, d.rel, socketID{ino: d.id.ino + 1})
	if c, _ := w.rec.class(path); c != classNormal {
		t.Errorf("a replaced socket starts in class %v, want normal", c)
	}
}

// newAttemptWatcher returns an unstarted watcher with default options
// whose reconciler talks to exec and reads exec's fake clock, and the path
// of one bound (not listening) socket it knows.
func newAttemptWatcher(t *testing.T, exec *fakeExec, failHandler bool) (*watcher, string) {
	t.Helper()
	dir := testDir(t)
	w, err := newWatcher(dir, withRegistry(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	w.rec.retries.jitter = 0 // the cases check exact delays
	h := HandlerFuncs{}
	if failHandler {
		h.Register = func(context.Context, string, string, []string, *time.Duration) error {
			return errors.New("consumer not ready")
		}
	}
	w.AddHandler(testType, h)
	exec.clock = &fakeClock{t: time.Unix(1_700_000_000, 0)}
	w.rec.exec = exec
	w.rec.now = exec.clock.now
	hs := &hostileSet{}
	path := filepath.Join(dir, "h.sock")
	if err := hs.bindOnly(path, "h"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range hs.closers {
			_ = c.Close()
		}
	})
	id, _, err := lstatSocket(path)
	if err != nil {
		t.Fatal(err)
	}
	w.dsw.Observe(path, "h.sock", id)
	return w, path
}
