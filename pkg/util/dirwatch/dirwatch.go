package dirwatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// Op says what an Event reports. File system operations may be combined in
// one Event; Rescan, RootUnavailable and Unwatchable come alone.
type Op uint32

const (
	// Create: Path appeared (created, or renamed into a watched directory).
	Create Op = 1 << iota
	// Write: Path was written.
	Write
	// Remove: Path was removed. For the root, see README.md.
	Remove
	// Rename: Path was renamed away; its new name, if watched, has a Create.
	Rename
	// Chmod: Path's attributes changed.
	Chmod
	// Rescan: events may have been lost. Every watch is in place again;
	// the caller must read the whole tree. Reason says why.
	Rescan
	// RootUnavailable: the root cannot be created or watched. Err says
	// why; the Watcher retries after RetryIn.
	RootUnavailable
	// Unwatchable: the directory Path cannot be watched (Err); its changes
	// are not reported until a later Rescan. Reported once per failure.
	Unwatchable
)

// Has reports whether o includes every bit of other.
func (o Op) Has(other Op) bool { return o&other == other }

// Gone reports a Remove or a Rename.
func (o Op) Gone() bool { return o&(Remove|Rename) != 0 }

var opNames = []string{"Create", "Write", "Remove", "Rename", "Chmod", "Rescan", "RootUnavailable", "Unwatchable"}

func (o Op) String() string {
	var names []string
	for i, n := range opNames {
		if o&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, "|")
}

// Reason says why a Rescan is delivered.
type Reason string

// Reasons of Rescan events.
const (
	// ReasonStarted: the root is watched for the first time.
	ReasonStarted Reason = "Started"
	// ReasonRootRecovered: the root is watched again after it was removed
	// or unavailable.
	ReasonRootRecovered Reason = "RootRecovered"
	// ReasonOverflow: the kernel's event queue overflowed.
	ReasonOverflow Reason = "Overflow"
	// ReasonWatchError: fsnotify reported an error (Event.Err).
	ReasonWatchError Reason = "WatchError"
	// ReasonRestarted: fsnotify's watcher stopped and was replaced.
	ReasonRestarted Reason = "Restarted"
	// ReasonRequested: the caller asked with Resync.
	ReasonRequested Reason = "Requested"
	// ReasonWatchRecovered: a directory that could not be watched is.
	ReasonWatchRecovered Reason = "WatchRecovered"
)

// Event is one thing a Watcher reports.
type Event struct {
	Op Op
	// Path is absolute, below or equal to the root; empty for Rescan.
	Path string
	// Reason is set for Rescan.
	Reason Reason
	// Err is set for RootUnavailable, Unwatchable and a Rescan after a
	// watch error.
	Err error
	// RetryIn is set for RootUnavailable.
	RetryIn time.Duration
}

// Watcher watches one directory tree. Its methods are safe for concurrent
// use.
type Watcher interface {
	// Start sets up the root's watch and starts the goroutine that
	// delivers events, until ctx ends. The first Event is a Rescan
	// (ReasonStarted) or a RootUnavailable. Start returns the error of
	// this first attempt; the Watcher keeps retrying anyway. It may be
	// called once.
	Start(ctx context.Context) error
	// Events delivers the events, in order. It is closed after ctx ends.
	// The Watcher waits for the caller: a caller that falls behind makes
	// the kernel drop events, which is reported as a Rescan.
	Events() <-chan Event
	// Resync asks for a Rescan (ReasonRequested), with every watch added
	// again. It does not block; requests made before the Rescan is
	// delivered are folded into it.
	Resync()
	// Watching reports whether the directory path has a watch now.
	Watching(path string) bool
	// Root returns the watched root, cleaned.
	Root() string
}

// Unlimited as Options.MaxDepth watches the whole tree.
const Unlimited = -1

// Defaults of Options.
const (
	DefaultRetryMin = 500 * time.Millisecond
	DefaultRetryMax = time.Minute
	DefaultBuffer   = 16
)

// Options configure a Watcher. Zero values are the defaults.
type Options struct {
	// MaxDepth is how many levels of directories below the root are
	// watched: 0 the root only, 1 the root and its subdirectories, ...,
	// Unlimited all.
	MaxDepth int
	// FollowSymlinks watches symbolic links to directories (within
	// MaxDepth) like directories; a link pointed elsewhere is watched
	// again. Otherwise links are reported but not followed.
	FollowSymlinks bool
	// Ignore reports base names to skip: not watched, not reported, not
	// walked. It is never asked about the root.
	Ignore func(name string) bool
	// CreateRoot creates the root (with RootPerm, default 0755) when it
	// is missing; otherwise the Watcher waits for it.
	CreateRoot bool
	RootPerm   os.FileMode
	// ReportExisting: when a directory appears, a Create is reported for
	// each entry already in it (within MaxDepth), after its own Create.
	// Entries may then be reported twice.
	ReportExisting bool
	// RetryMin and RetryMax bound the backoff of retries of the root and
	// of directories that cannot be watched.
	RetryMin, RetryMax time.Duration
	// Buffer is the capacity of the Events channel.
	Buffer int
	// Metrics receives the Watcher's counts. Nil means none.
	Metrics Metrics
	// Clock is for tests.
	Clock clock.Clock
	// NewFSWatcher replaces fsnotify, for dirwatch's own tests and
	// dirwatchtest.InjectFS; callers replace the whole Watcher instead
	// (NewFunc).
	NewFSWatcher func() (FSWatcher, error)
}

// Metrics is what a Watcher reports for metrics. Each caller implements it
// under its own metric names; embed NoMetrics to implement a part.
// Methods are called from the Watcher's goroutine and must not block.
type Metrics interface {
	// Overflowed: the kernel dropped events; a Rescan follows.
	Overflowed()
	// WatchError: fsnotify reported an error other than an overflow.
	WatchError(err error)
	// WatchFailed: a directory below the root cannot be watched.
	WatchFailed(path string, err error)
	// RootAvailable: false while the root cannot be watched, true once
	// it is.
	RootAvailable(ok bool)
}

// NoMetrics implements Metrics with no-ops.
type NoMetrics struct{}

func (NoMetrics) Overflowed()               {}
func (NoMetrics) WatchError(error)          {}
func (NoMetrics) WatchFailed(string, error) {}
func (NoMetrics) RootAvailable(bool)        {}

var _ Metrics = NoMetrics{}

func (o Options) withDefaults() Options {
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(o.RetryMin, DefaultRetryMax)
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.RootPerm == 0 {
		o.RootPerm = 0o755
	}
	if o.Ignore == nil {
		o.Ignore = func(string) bool { return false }
	}
	if o.Metrics == nil {
		o.Metrics = NoMetrics{}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.NewFSWatcher == nil {
		o.NewFSWatcher = NewFSWatcher
	}
	return o
}

// NewFunc makes a Watcher of the tree at root. New is the real one; it is
// the one seam of dirwatch's callers: each keeps a NewFunc (nil: New) that
// its tests replace with dirwatchtest.Fake's New, or with InjectFS's New
// for a real Watcher on an injecting fsnotify.
type NewFunc func(root string, opts Options) (Watcher, error)

var _ NewFunc = New

// New returns a Watcher of the tree at root, which must be absolute.
func New(root string, opts Options) (Watcher, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("dirwatch: root must be an absolute path, got %q", root)
	}
	return newWatcher(filepath.Clean(root), opts.withDefaults()), nil
}
