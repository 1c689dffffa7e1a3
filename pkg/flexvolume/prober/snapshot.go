package prober

import (
	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
)

// State is what a loaded driver may be used for.
type State int

const (
	// StateReady: init succeeded; the driver serves all work.
	StateReady State = iota
	// StateInitFailed: the current executable's init failed. It must not
	// be used for new work; volumes already set up may still be torn down.
	StateInitFailed
	// StateRemoving: the driver was removed from disk while volumes still
	// use it. It stays only to tear those volumes down.
	StateRemoving
)

func (s State) String() string {
	switch s {
	case StateReady:
		return "ready"
	case StateInitFailed:
		return "init-failed"
	case StateRemoving:
		return "removing"
	}
	return "unknown"
}

// Entry is one driver as published. Entries are immutable: a change of any
// field publishes a new Entry with a new Version.
type Entry struct {
	// Name is the plugin name, "<vendor>/<driver>".
	Name string
	// DirName is the directory name, "<vendor>~<driver>".
	DirName string
	// ExecPath is the driver executable.
	ExecPath string
	// State says what the driver may be used for.
	State State
	// Capabilities are those of the running version. For StateInitFailed
	// and StateRemoving they are those of the last version that initialised,
	// or the defaults with Attach false when none did.
	Capabilities driver.Capabilities
	// Driver runs driver commands; for StateInitFailed and StateRemoving it
	// is only meant for teardown.
	Driver driver.Driver
	// Err says why the driver is not ready.
	Err error
	// Version is unique among all Entries of a Prober.
	Version uint64
}

// Snapshot is the published state. It is immutable; do not modify its maps.
type Snapshot struct {
	// Generation increases with every publication.
	Generation uint64
	// Entries are the loaded drivers by plugin name.
	Entries map[string]*Entry
	// Problems describe what is wrong now (failed inits, invalid directory
	// names, an unavailable plugin directory), by a stable key.
	Problems map[string]string
	next     chan struct{}
}

// Changed returns a channel closed when a newer Snapshot is published.
func (s *Snapshot) Changed() <-chan struct{} { return s.next }

func newSnapshot(gen uint64, entries map[string]*Entry, problems map[string]string) *Snapshot {
	return &Snapshot{Generation: gen, Entries: entries, Problems: problems, next: make(chan struct{})}
}
