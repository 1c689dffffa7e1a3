package dirwatchtest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// Fake is a dirwatch.Watcher for the unit tests of callers: the test sends the
// events, and sets which directories count as watched.
type Fake struct {
	root   string
	events chan dirwatch.Event

	mu       sync.Mutex
	opts     dirwatch.Options
	made     int
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

// New is a dirwatch.NewFunc that returns f, for the caller's seam. It
// records opts (see Options) and fails for a root other than f's, so that
// a test notices a caller watching the wrong directory.
func (f *Fake) New(root string, opts dirwatch.Options) (dirwatch.Watcher, error) {
	if root != f.root {
		return nil, fmt.Errorf("dirwatchtest: fake of %s asked to watch %s", f.root, root)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opts = opts
	f.made++
	return f, nil
}

// Options returns the options of the last New, e.g. to check what the
// caller asked for or to call its Metrics.
func (f *Fake) Options() dirwatch.Options {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opts
}

// Made returns how often New was called.
func (f *Fake) Made() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.made
}

// Start records the call and returns the error NewFake was given. It
// delivers nothing and closes nothing: the test sends events (Send) and
// closes Events (Close) itself.
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
