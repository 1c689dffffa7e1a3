package reconciler

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/cache"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/executor/executortest"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/metrics"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/socket"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/throttle"
)

// testbed drives one reconciler synchronously, one attempt at a time, as
// the dispatcher would: no sockets, no gRPC, no goroutines of its own, and
// a fake clock that moves only to the next retry that falls due. What
// happens is appended to one log, in order:
//
//	validate eta.2         a handler call, with the socket whose endpoint it got
//	status eta.2 ok        a NotifyRegistrationStatus the plugin received
//	retry eta.2 10ms       the attempt asked to be retried after 10ms
//	remove eta.2           the watcher deleted a stale socket file
//
// A socket is named by its label: eta.2 is /plugins/eta.2.sock, serving
// plugin "eta" of testType with the socket itself as endpoint.
type testbed struct {
	t     *testing.T
	ctx   context.Context
	clock *fakeClock
	net   *executortest.FakeExecutor
	queue *fakeQueue
	h     *scriptedHandler
	dsw   cache.DesiredStateOfWorld
	asw   cache.ActualStateOfWorld
	rec   *reconciler
	// handlers are the handlers by plugin type, as the watcher keeps them;
	// pending the reasons of types expected to get one (ExpectHandler).
	handlers map[string]cache.Handler
	pending  map[string]string
	log      []string
	ino      uint64
}

const testbedDir = "/plugins"

func newTestbed(t *testing.T, opts Config, h *scriptedHandler, handler cache.Handler) *testbed {
	t.Helper()
	opts = withDefaults(opts)
	opts.ThrottleRate, opts.ThrottleBurst = 1000, 1000
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	rep := report.New(report.Config{Interval: 10 * time.Second, Budget: 10})
	rep.SetLogger(logger)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	tb := &testbed{t: t, ctx: ctx, clock: clock, h: h, handlers: map[string]cache.Handler{testType: handler}, pending: map[string]string{}}
	tb.net = executortest.NewFakeExecutor()
	tb.net.Record = func(op, path, detail string) { tb.record("%s", strings.TrimSpace(op+" "+labelOf(path)+" "+detail)) }
	tb.queue = &fakeQueue{clock: clock, waiting: map[string]time.Time{}}
	h.t, h.record = t, tb.record
	tb.dsw = cache.NewDesiredStateOfWorld(clock.now)
	tb.asw = cache.NewActualStateOfWorld()
	tb.rec = newReconciler(opts, Dependencies{
		DesiredState: tb.dsw,
		ActualState:  tb.asw,
		Executor:     tb.net,
		Monitor:      executortest.NewFakeMonitor(), // the connection stays up; drop() simulates a drop
		Throttle:     throttle.New(opts.ThrottleRate, opts.ThrottleBurst, tb.queue.add, clock.now),
		Reporter:     rep,
		Metrics:      metrics.New(),
		Handler: func(typ string) (cache.Handler, bool) {
			h, ok := tb.handlers[typ]
			return h, ok
		},
		Pending: func(typ string) (string, bool) {
			r, ok := tb.pending[typ]
			return r, ok
		},
		Enqueue: tb.queue.add,
		Now:     clock.now,
		Stat:    tb.net.Stat,
	})
	tb.rec.retries.jitter = 0 // the cases check exact delays
	return tb
}

// withDefaults fills in the watcher's defaults, as its Options do.
func withDefaults(c Config) Config {
	c.RetryBase = cmp.Or(c.RetryBase, 10*time.Millisecond)
	c.RetryMax = cmp.Or(c.RetryMax, 2*time.Minute)
	c.StaleAttempts = cmp.Or(c.StaleAttempts, 5)
	c.StaleGrace = cmp.Or(c.StaleGrace, time.Second)
	c.SuspectAfter = cmp.Or(c.SuspectAfter, time.Second)
	c.IdentityPolicy = cmp.Or(c.IdentityPolicy, socket.IdentityWarn)
	return c
}

func (tb *testbed) record(format string, args ...any) {
	tb.log = append(tb.log, fmt.Sprintf(format, args...))
}

// run processes the queue until nothing is due within d, then sets the
// clock to the end of d.
func (tb *testbed) run(d time.Duration) {
	tb.t.Helper()
	end := tb.clock.now().Add(d)
	for n := 0; ; n++ {
		if n == 1000 {
			tb.t.Fatalf("the queue did not settle within %v", d)
		}
		path, ok := tb.queue.next(end)
		if !ok {
			break
		}
		_, gen := tb.rec.Class(path)
		if delay := tb.rec.Attempt(tb.ctx, path, gen); delay > 0 {
			tb.record("retry %s %v", labelOf(path), delay)
			tb.queue.addAfter(path, delay)
		}
	}
	tb.clock.advance(end.Sub(tb.clock.now()))
}

// registered returns the labels of the registered endpoints, after
// checking that the handler and the actual state agree on them.
func (tb *testbed) registered() []string {
	tb.t.Helper()
	var inASW []string
	for _, i := range tb.asw.List() {
		if i.Registered {
			inASW = append(inASW, labelOf(i.Endpoint))
		}
	}
	var inHandler []string
	for ep := range tb.h.registered {
		inHandler = append(inHandler, labelOf(ep))
	}
	slices.Sort(inASW)
	slices.Sort(inHandler)
	if !slices.Equal(inASW, inHandler) {
		tb.t.Errorf("registered in the actual state %q, in the handler %q", inASW, inHandler)
	}
	return inHandler
}

func socketPath(label string) string { return filepath.Join(testbedDir, label+socket.Suffix) }

func labelOf(path string) string { return strings.TrimSuffix(filepath.Base(path), socket.Suffix) }

// fakeQueue models the watcher's delaying work queue: a path is at most
// once in the ready FIFO, and at most once waiting, due at the earliest
// time it was added for.
type fakeQueue struct {
	clock   *fakeClock
	ready   []string
	waiting map[string]time.Time
}

func (q *fakeQueue) add(path string) {
	if !slices.Contains(q.ready, path) {
		q.ready = append(q.ready, path)
	}
}

func (q *fakeQueue) addAfter(path string, d time.Duration) {
	due := q.clock.now().Add(d)
	if cur, ok := q.waiting[path]; !ok || due.Before(cur) {
		q.waiting[path] = due
	}
}

// next returns the next ready path. When none is ready it moves the clock
// to the earliest waiting path, if that is due by end.
func (q *fakeQueue) next(end time.Time) (string, bool) {
	q.promote()
	if len(q.ready) == 0 {
		var due time.Time
		for _, at := range q.waiting {
			if due.IsZero() || at.Before(due) {
				due = at
			}
		}
		if due.IsZero() || due.After(end) {
			return "", false
		}
		q.clock.advance(due.Sub(q.clock.now()))
		q.promote()
	}
	p := q.ready[0]
	q.ready = q.ready[1:]
	return p, true
}

// promote moves the waiting paths that are due to the ready FIFO, earliest
// first.
func (q *fakeQueue) promote() {
	now := q.clock.now()
	var due []string
	for p, at := range q.waiting {
		if !at.After(now) {
			due = append(due, p)
		}
	}
	slices.SortFunc(due, func(a, b string) int {
		return cmp.Or(q.waiting[a].Compare(q.waiting[b]), strings.Compare(a, b))
	})
	for _, p := range due {
		delete(q.waiting, p)
		q.add(p)
	}
}

// reconcilerCase is a named scenario: steps run in order on one testbed.
type reconcilerCase struct {
	name string
	opts Config
	// refuseDuplicates, replacer and policy shape the handler
	// (scriptedHandler); a non-zero policy makes it a PolicyHandler.
	refuseDuplicates, replacer bool
	policy                     cache.Policy
	steps                      []step
}

// step applies its actions (file events, faults), runs the queue for wait
// on the fake clock, and compares the log of the step with want (only the
// lines starting with only, if set) and the registered sockets with
// registered.
type step struct {
	do         []action
	wait       time.Duration
	want       []string
	only       string
	registered []string
}

type action func(*testbed)

func runReconcilerCases(t *testing.T, cases []reconcilerCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newScriptedHandler(tc.refuseDuplicates)
			h.policy = tc.policy
			var handler cache.Handler = h
			switch {
			case tc.replacer:
				handler = scriptedReplacer{h}
			case tc.policy != cache.Policy{}:
				handler = scriptedPolicy{h}
			}
			tb := newTestbed(t, tc.opts, h, handler)
			for i, st := range tc.steps {
				tb.log = nil
				for _, do := range st.do {
					do(tb)
				}
				tb.run(st.wait)
				got := tb.log
				if st.only != "" {
					got = slices.DeleteFunc(got, func(l string) bool { return !strings.HasPrefix(l, st.only) })
				}
				if !slices.Equal(got, st.want) {
					t.Errorf("step %d: log\n\t%s\nwant\n\t%s", i+1, strings.Join(got, "\n\t"), strings.Join(st.want, "\n\t"))
				}
				if reg := tb.registered(); !slices.Equal(reg, st.registered) {
					t.Errorf("step %d: registered %q, want %q", i+1, reg, st.registered)
				}
			}
		})
	}
}

// sock is a socket file to create, with its change time.
type sock struct {
	label string
	ctime int64
}

// create makes socket files, discovered in the order given, each served by
// a plugin named after its label up to the first dot. Creating an existing
// label replaces the socket (a new inode) and its plugin, as a restarted
// plugin does.
func create(socks ...sock) action {
	return func(tb *testbed) {
		for _, s := range socks {
			name, _, _ := strings.Cut(s.label, ".")
			tb.ino++
			path := socketPath(s.label)
			tb.net.Files[path] = socket.ID{Ino: tb.ino, Ctime: s.ctime}
			tb.net.Plugins[path] = &executortest.FakePlugin{Info: pluginInfo(testType, name)}
			tb.observe(s.label)
		}
	}
}

// observe is the fs watcher's part: record the file and queue its path.
func (tb *testbed) observe(label string) {
	path := socketPath(label)
	if tb.dsw.Observe(path, label+socket.Suffix, tb.net.Files[path]) {
		tb.queue.add(path)
	}
}

func remove(labels ...string) action {
	return func(tb *testbed) {
		for _, l := range labels {
			path := socketPath(l)
			delete(tb.net.Files, path)
			delete(tb.net.Plugins, path)
			if tb.dsw.Forget(path) {
				tb.queue.add(path)
			}
		}
	}
}

// plugin changes what listens on label's socket.
func plugin(label string, change func(*executortest.FakePlugin)) action {
	return func(tb *testbed) { change(tb.net.Plugins[socketPath(label)]) }
}

func probeFails(label string, err error, times int) action {
	return plugin(label, func(p *executortest.FakePlugin) { p.ProbeErr, p.FailProbes = err, times })
}

func notifyFails(label string, times int) action {
	return plugin(label, func(p *executortest.FakePlugin) { p.FailNotify = times })
}

// handlerFails makes the handler call "<op> <label>" fail times times.
func handlerFails(call string, times int) action {
	return func(tb *testbed) { tb.h.fail[call] = times }
}

// drop is what the monitor reports when a registered plugin's connection
// drops.
func drop(label string) action {
	return func(tb *testbed) { tb.rec.ConnectionDropped(socketPath(label)) }
}

// touch queues label's path as an fs event that changed nothing would.
func touch(label string) action {
	return func(tb *testbed) { tb.queue.add(socketPath(label)) }
}

// holdKey takes the key gate of plugin name, as a concurrent attempt
// would; releaseKey gives it back.
func holdKey(name string) action {
	return func(tb *testbed) {
		if !tb.rec.gate.tryLock(cache.PluginKey{Type: testType, Name: name}, "test") {
			tb.t.Fatalf("key %s is busy", name)
		}
	}
}

func releaseKey(name string) action {
	return func(tb *testbed) { tb.rec.gate.unlock(cache.PluginKey{Type: testType, Name: name}) }
}
