package prober

import "github.com/fsnotify/fsnotify"

// fsWatcher is the part of fsnotify.Watcher the populator uses; tests
// replace it to inject errors.
type fsWatcher interface {
	Add(path string) error
	Remove(path string) error
	Close() error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
}

type fsnotifyWatcher struct {
	w *fsnotify.Watcher
}

func newFsnotifyWatcher() (fsWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return &fsnotifyWatcher{w: w}, nil
}

func (f *fsnotifyWatcher) Add(path string) error         { return f.w.Add(path) }
func (f *fsnotifyWatcher) Remove(path string) error      { return f.w.Remove(path) }
func (f *fsnotifyWatcher) Close() error                  { return f.w.Close() }
func (f *fsnotifyWatcher) Events() <-chan fsnotify.Event { return f.w.Events }
func (f *fsnotifyWatcher) Errors() <-chan error          { return f.w.Errors }
