package dirwatchtest

import (
	"context"
	"errors"
	"sync"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// Fake is a dirwatch.Watcher for the unit tests of callers: the test sends the
// events, and sets which directories count as watched.
type Fake struct {
	root   string
	events chan dirwatch.Event

	mu       sync.Mutex
	started  bool
	startErr error
	watching map[string]bool
	resyncs  int
}

var _ dirwatch.Watcher = &Fake{}

// NewFake returns a Fake for root. StartErr, if not nil, is what Start
// returns.
func NewFake(root string, startErr error) *Fake {
	return &Fake{root: root, events: make(chan dirwatch.Event), startErr: startErr, watching: map[string]bool{}}
}

// Start closes Events when ctx ends; it delivers nothing by itself.
func (f *Fake) Start(_ context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return errors.New("dirwatch: watcher already started")
	}
	f.started = true
	return f.startErr
}

func (f *Fake) Events() <-chan dirwatch.Event { return f.events }
func (f *Fake) Root() string                  { return f.root }

// Resync counts the calls; see Resyncs.
func (f *Fake) Resync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resyncs++
}

// Resyncs returns how often Resync was called.
func (f *Fake) Resyncs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resyncs
}

func (f *Fake) Watching(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watching[path]
}

// SetWatching sets what Watching reports for path.
func (f *Fake) SetWatching(path string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watching[path] = ok
}

// Send delivers ev, waiting until the caller takes it or ctx ends. It
// returns false when ctx ended first.
func (f *Fake) Send(ctx context.Context, ev dirwatch.Event) bool {
	select {
	case f.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close closes Events, as a real dirwatch.Watcher does when its context ends.
func (f *Fake) Close() { close(f.events) }
