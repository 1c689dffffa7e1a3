package dirwatchtest

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"

	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// InjectFS is a dirwatch.FSWatcher backed by a real fsnotify watcher that
// can drop events, inject errors and fail Add for chosen paths. Callers'
// tests pass its New as their dirwatch.NewFunc; dirwatch's own tests pass
// it through dirwatch.Options.NewFSWatcher.
type InjectFS struct {
	dirwatch.FSWatcher
	events chan fsnotify.Event
	errs   chan error
	drop   atomic.Bool
	mu     sync.Mutex
	fail   map[string]bool
	before func(path string)
}

// ErrInjected is what Add returns for a path set with FailAdd.
var ErrInjected = errors.New("injected watch failure")

// NewInjectFS returns an InjectFS that passes everything through.
func NewInjectFS() (*InjectFS, error) {
	real, err := dirwatch.NewFSWatcher()
	if err != nil {
		return nil, err
	}
	f := &InjectFS{FSWatcher: real, events: make(chan fsnotify.Event), errs: make(chan error), fail: map[string]bool{}}
	go func() {
		defer close(f.events)
		for ev := range real.Events() {
			if !f.drop.Load() {
				f.events <- ev
			}
		}
	}()
	go func() {
		for err := range real.Errors() {
			f.errs <- err
		}
	}()
	return f, nil
}

// New is a dirwatch.NewFunc: a real dirwatch.Watcher of root on f instead
// of fsnotify. Each InjectFS serves one Watcher.
func (f *InjectFS) New(root string, opts dirwatch.Options) (dirwatch.Watcher, error) {
	opts.NewFSWatcher = func() (dirwatch.FSWatcher, error) { return f, nil }
	return dirwatch.New(root, opts)
}

func (f *InjectFS) Events() <-chan fsnotify.Event { return f.events }
func (f *InjectFS) Errors() <-chan error          { return f.errs }

// Drop makes the events from now on be dropped (true) or delivered.
func (f *InjectFS) Drop(drop bool) { f.drop.Store(drop) }

// Inject delivers err as if fsnotify reported it; it waits for the reader.
func (f *InjectFS) Inject(err error) { f.errs <- err }

// FailAdd makes Add of path fail with ErrInjected (true), or work again.
func (f *InjectFS) FailAdd(path string, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[path] = fail
}

// BeforeAdd makes Add call hook first, e.g. to remove the directory being
// added. Nil removes the hook.
func (f *InjectFS) BeforeAdd(hook func(path string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before = hook
}

func (f *InjectFS) Add(path string) error {
	f.mu.Lock()
	fail, before := f.fail[path], f.before
	f.mu.Unlock()
	if before != nil {
		before(path)
	}
	if fail {
		return ErrInjected
	}
	return f.FSWatcher.Add(path)
}
