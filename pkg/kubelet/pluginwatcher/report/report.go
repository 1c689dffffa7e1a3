package report

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Event reasons posted on the Node when Config.Recorder is set.
const (
	EventPluginRegistered     = "PluginRegistered"
	EventPluginDeregistered   = "PluginDeregistered"
	EventPluginRejected       = "PluginRegistrationRejected"
	EventPluginFailed         = "PluginRegistrationFailed"
	EventPluginThrottled      = "PluginRegistrationThrottled"
	EventStaleSocketRemoved   = "PluginStaleSocketRemoved"
	EventPluginDirUnwatchable = "PluginDirectoryUnwatchable"
)

// Reporter emits the plugin watcher's operator-facing logs and events. key
// names the plugin (or socket, or directory) a line is about; reason is the
// Node event's reason ("" for none).
type Reporter interface {
	// Info logs msg at level 0 and posts a Normal event.
	Info(msg, key, reason string, kv ...any)
	// Success logs a successful registration at V(2) and posts a Normal
	// event.
	Success(msg, key, reason string, kv ...any)
	// Warn logs msg as an error and posts a Warning event.
	Warn(msg, key, reason string, err error, kv ...any)
	// Debug logs detail at V(4).
	Debug(msg string, kv ...any)
}

// Config configures a RateLimited reporter.
type Config struct {
	// Interval and Budget: one line per message and key per Interval, at
	// most Budget lines per Interval in total.
	Interval time.Duration
	Budget   int
	// Recorder and NodeRef, when both set, receive the events.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
}

// RateLimited is the Reporter that keeps the logs and events within a
// budget. Each (message, plugin) pair is emitted at most once per interval
// and at most budget lines are emitted per interval in total; what is held
// back is counted and summarised in one line per interval. Debug detail
// bypasses it at V(4).
//
// Successful registrations (Success) are logged at V(2) outside the budget,
// so that a restart with many plugins logs each of them and they never
// crowd out a warning; the once per plugin per interval limit still holds.
// Their events have a budget of their own of the same size.
type RateLimited struct {
	interval time.Duration
	budget   int
	now      func() time.Time
	recorder record.EventRecorder
	ref      *v1.ObjectReference

	mu          sync.Mutex
	logger      klog.Logger
	last        map[string]time.Time
	suppressed  map[string]int
	windowStart time.Time
	windowCount int
	// successEvents counts success events in the window; suppressedV2
	// counts success lines held back, summarised at V(2).
	successEvents int
	suppressedV2  map[string]int
}

var _ Reporter = &RateLimited{}

// New returns a RateLimited reporter that logs to klog.Background() until
// SetLogger is called.
func New(cfg Config) *RateLimited {
	return &RateLimited{
		interval:     cfg.Interval,
		budget:       cfg.Budget,
		now:          time.Now,
		recorder:     cfg.Recorder,
		ref:          cfg.NodeRef,
		logger:       klog.Background(),
		last:         map[string]time.Time{},
		suppressed:   map[string]int{},
		suppressedV2: map[string]int{},
	}
}

// SetLogger sets the logger used from now on.
func (r *RateLimited) SetLogger(logger klog.Logger) {
	r.mu.Lock()
	r.logger = logger
	r.mu.Unlock()
}

// Run flushes summaries until ctx ends.
func (r *RateLimited) Run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.Flush()
			return
		case <-t.C:
			r.Flush()
		}
	}
}

func (r *RateLimited) allow(msg, key string) (klog.Logger, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.roll()
	id := msg + "\x00" + key
	if r.repeated(id, now) || r.windowCount >= r.budget {
		r.suppressed[msg]++
		return r.logger, false
	}
	r.last[id] = now
	r.windowCount++
	return r.logger, true
}

// allowSuccess is allow for Success: only repeats are held back, and the
// event has its own budget.
func (r *RateLimited) allowSuccess(msg, key string) (logger klog.Logger, ok, event bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.roll()
	id := msg + "\x00" + key
	if r.repeated(id, now) {
		r.suppressedV2[msg]++
		return r.logger, false, false
	}
	r.last[id] = now
	event = r.successEvents < r.budget
	if event {
		r.successEvents++
	}
	return r.logger, true, event
}

// roll starts a new window when the interval has passed and returns now.
func (r *RateLimited) roll() time.Time {
	now := r.now()
	if now.Sub(r.windowStart) >= r.interval {
		r.windowStart, r.windowCount, r.successEvents = now, 0, 0
	}
	return now
}

// repeated reports whether the message id was emitted within the interval.
func (r *RateLimited) repeated(id string, now time.Time) bool {
	t, ok := r.last[id]
	return ok && now.Sub(t) < r.interval
}

// Flush logs the summaries of what was held back and forgets the lines
// whose interval has passed.
func (r *RateLimited) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for id, t := range r.last {
		if now.Sub(t) >= r.interval {
			delete(r.last, id)
		}
	}
	if n := sum(r.suppressedV2); n > 0 {
		r.logger.V(2).Info("Suppressed repeated plugin watcher messages", "count", n, "byMessage", r.suppressedV2, "interval", r.interval)
		r.suppressedV2 = map[string]int{}
	}
	if n := sum(r.suppressed); n > 0 {
		r.logger.Info("Suppressed repeated plugin watcher messages", "count", n, "byMessage", r.suppressed, "interval", r.interval)
		r.suppressed = map[string]int{}
	}
}

func sum(m map[string]int) int {
	total := 0
	for _, n := range m {
		total += n
	}
	return total
}

// Info implements Reporter.
func (r *RateLimited) Info(msg, key, reason string, kv ...any) {
	logger, ok := r.allow(msg, key)
	if !ok {
		return
	}
	logger.Info(msg, kv...)
	r.event(v1.EventTypeNormal, reason, msg, key, nil)
}

// Success implements Reporter; see RateLimited for its limits.
func (r *RateLimited) Success(msg, key, reason string, kv ...any) {
	logger, ok, event := r.allowSuccess(msg, key)
	if !ok {
		return
	}
	logger.V(2).Info(msg, kv...)
	if event {
		r.event(v1.EventTypeNormal, reason, msg, key, nil)
	}
}

// Warn implements Reporter.
func (r *RateLimited) Warn(msg, key, reason string, err error, kv ...any) {
	logger, ok := r.allow(msg, key)
	if !ok {
		return
	}
	logger.Error(err, msg, kv...)
	r.event(v1.EventTypeWarning, reason, msg, key, err)
}

func (r *RateLimited) event(eventType, reason, msg, key string, err error) {
	if r.recorder == nil || r.ref == nil || reason == "" {
		return
	}
	text := fmt.Sprintf("%s: %s", msg, key)
	if err != nil {
		text = fmt.Sprintf("%s: %v", text, err)
	}
	r.recorder.Event(r.ref, eventType, reason, text)
}

// Debug implements Reporter; it is never rate-limited.
func (r *RateLimited) Debug(msg string, kv ...any) {
	r.mu.Lock()
	logger := r.logger
	r.mu.Unlock()
	logger.V(4).Info(msg, kv...)
}
