package handlers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// logCapture keeps what a component logs, in order, so that a test can
// wait for the component to say that it did something: a positive event,
// where a sleep would only hope that it is done. Entries from several
// loggers (and from record) share one order.
type logCapture struct {
	mu      sync.Mutex
	entries []logEntry
}

// logEntry is one message with its key/value pairs, and its place in the
// capture's order.
type logEntry struct {
	seq int
	at  time.Time
	msg string
	kv  []any
}

// value returns the value of key, or nil.
func (e logEntry) value(key string) any {
	for i := 0; i+1 < len(e.kv); i += 2 {
		if e.kv[i] == key {
			return e.kv[i+1]
		}
	}
	return nil
}

// is reports whether e is msg with every key/value pair of kv, compared as
// printed (%v).
func (e logEntry) is(msg string, kv ...any) bool {
	if e.msg != msg {
		return false
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if fmt.Sprint(e.value(kv[i].(string))) != fmt.Sprint(kv[i+1]) {
			return false
		}
	}
	return true
}

// record adds an entry and returns it.
func (c *logCapture) record(msg string, kv ...any) logEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := logEntry{seq: len(c.entries), at: time.Now(), msg: msg, kv: kv}
	c.entries = append(c.entries, e)
	return e
}

// find returns the first entry after seq that is msg with kv.
func (c *logCapture) find(after int, msg string, kv ...any) (logEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries[after+1:] {
		if e.is(msg, kv...) {
			return e, true
		}
	}
	return logEntry{}, false
}

// all returns the entries after seq that are msg with kv.
func (c *logCapture) all(after int, msg string, kv ...any) []logEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logEntry
	for _, e := range c.entries[after+1:] {
		if e.is(msg, kv...) {
			out = append(out, e)
		}
	}
	return out
}

// wait waits, boundedly, for the first entry after seq that is msg with kv
// (-1: any entry).
func (c *logCapture) wait(t *testing.T, after int, msg string, kv ...any) logEntry {
	t.Helper()
	var e logEntry
	eventually(t, fmt.Sprintf("log %q %v", msg, kv), func() bool {
		var ok bool
		e, ok = c.find(after, msg, kv...)
		return ok
	})
	return e
}

// context returns ctx with a logger that passes every entry on to ctx's
// logger and records it, at every verbosity.
func (c *logCapture) context(ctx context.Context) context.Context {
	logger := klog.FromContext(ctx)
	return klog.NewContext(ctx, logger.WithSink(&captureSink{c: c, inner: logger.GetSink()}))
}

type captureSink struct {
	c      *logCapture
	inner  klog.LogSink
	values []any
}

var _ klog.LogSink = &captureSink{}

func (s *captureSink) Init(info klog.RuntimeInfo) {
	s.inner.Init(klog.RuntimeInfo{CallDepth: info.CallDepth + 1})
}

// Enabled is true at every level, so that an entry the test waits for is
// recorded whatever the test logger's verbosity.
func (s *captureSink) Enabled(int) bool { return true }

// GetCallStackHelper passes on the test logger's t.Helper, so that its
// lines name the caller, not this sink.
func (s *captureSink) GetCallStackHelper() func() {
	if h, ok := s.inner.(interface{ GetCallStackHelper() func() }); ok {
		return h.GetCallStackHelper()
	}
	return func() {}
}

func (s *captureSink) Info(level int, msg string, kv ...any) {
	s.GetCallStackHelper()()
	s.c.record(msg, append(slices.Clone(s.values), kv...)...)
	if s.inner.Enabled(level) {
		s.inner.Info(level, msg, kv...)
	}
}

func (s *captureSink) Error(err error, msg string, kv ...any) {
	s.GetCallStackHelper()()
	s.c.record(msg, append(slices.Clone(s.values), kv...)...)
	s.inner.Error(err, msg, kv...)
}

func (s *captureSink) WithValues(kv ...any) klog.LogSink {
	return &captureSink{c: s.c, inner: s.inner.WithValues(kv...), values: append(slices.Clone(s.values), kv...)}
}

func (s *captureSink) WithName(name string) klog.LogSink {
	return &captureSink{c: s.c, inner: s.inner.WithName(name), values: s.values}
}
