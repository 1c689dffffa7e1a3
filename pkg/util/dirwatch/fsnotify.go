package dirwatch

import "github.com/fsnotify/fsnotify"

// FSWatcher is the part of fsnotify.Watcher a Watcher uses: the OS
// boundary. Tests replace it (Options.NewFSWatcher) to drop events or
// inject errors.
type FSWatcher interface {
	Add(path string) error
	Remove(path string) error
	Close() error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
}

type fsnotifyWatcher struct {
	w *fsnotify.Watcher
}

// NewFSWatcher returns an FSWatcher backed by a new fsnotify.Watcher.
func NewFSWatcher() (FSWatcher, error) {
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

// opOf translates fsnotify's operations.
func opOf(op fsnotify.Op) Op {
	var o Op
	for _, m := range []struct {
		from fsnotify.Op
		to   Op
	}{{fsnotify.Create, Create}, {fsnotify.Write, Write}, {fsnotify.Remove, Remove},
		{fsnotify.Rename, Rename}, {fsnotify.Chmod, Chmod}} {
		if op.Has(m.from) {
			o |= m.to
		}
	}
	return o
}
