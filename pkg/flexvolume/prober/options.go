package prober

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/driver"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// Defaults of Options.
const (
	DefaultMinScanInterval      = time.Second
	DefaultInitRetryMin         = 10 * time.Second
	DefaultInitRetryMax         = 5 * time.Minute
	DefaultInUseRecheckInterval = 5 * time.Second
	DefaultDirRetryMin          = 500 * time.Millisecond
	DefaultDirRetryMax          = time.Minute
	DefaultInitialSyncTimeout   = 10 * time.Second
	DefaultSettleWait           = 50 * time.Millisecond
)

// InUseChecker tells whether volumes still use a driver. The prober asks
// when a driver disappears from disk, and again every InUseRecheckInterval
// while the answer is true or an error; the driver stays loaded meanwhile.
type InUseChecker interface {
	DriverInUse(ctx context.Context, pluginName string) (bool, error)
}

// InUseFunc adapts a function to InUseChecker.
type InUseFunc func(ctx context.Context, pluginName string) (bool, error)

// DriverInUse implements InUseChecker.
func (f InUseFunc) DriverInUse(ctx context.Context, pluginName string) (bool, error) {
	return f(ctx, pluginName)
}

// EventSink receives the events worth telling an operator about, each once
// per change. Implementations must not block for long.
type EventSink interface {
	Event(ctx context.Context, ev Event)
}

// Event types, as in Kubernetes Events.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event reasons. All but DriverLoaded and DriverRemoved are Warnings.
// PluginDirUnavailable: the plugin directory cannot be created or watched.
// PluginDirScanFailed: it is watched but reading it failed; the loaded
// drivers are kept.
const (
	ReasonDriverLoaded          = "FlexVolumeDriverLoaded"
	ReasonDriverInitFailed      = "FlexVolumeDriverInitFailed"
	ReasonDriverRemovalDeferred = "FlexVolumeDriverRemovalDeferred"
	ReasonDriverRemoved         = "FlexVolumeDriverRemoved"
	ReasonDriverDirInvalid      = "FlexVolumeDriverDirInvalid"
	ReasonPluginDirUnavailable  = "FlexVolumePluginDirUnavailable"
	ReasonPluginDirScanFailed   = "FlexVolumePluginDirScanFailed"
)

// Event is one notable change.
type Event struct {
	Type    string
	Reason  string
	Driver  string
	Message string
}

// Options configures a Prober. Zero values mean the defaults.
type Options struct {
	// InUse says whether volumes still use a driver. Nil means never.
	InUse InUseChecker
	// Events receives notable changes. Nil means they are only logged.
	Events EventSink
	// Driver configures driver calls (timeouts, output limit).
	Driver driver.Config
	// MinScanInterval is the least time between two directory scans once a
	// burst of scanBurst back-to-back scans is used up.
	MinScanInterval time.Duration
	// InitRetryMin and InitRetryMax bound the backoff between init retries
	// of a driver version whose init failed.
	InitRetryMin, InitRetryMax time.Duration
	// InUseRecheckInterval is how often a removed but in-use driver is checked.
	InUseRecheckInterval time.Duration
	// DirRetryMin and DirRetryMax bound the backoff for creating the plugin
	// directory and its watch.
	DirRetryMin, DirRetryMax time.Duration
	// InitialSyncTimeout bounds how long New waits for the drivers present
	// at start to be initialised.
	InitialSyncTimeout time.Duration
	// SettleWait bounds how long, from their start, consumers may wait for
	// running driver inits (see Settling). Negative disables waiting.
	SettleWait time.Duration
	// Clock is for tests.
	Clock clock.Clock

	// newDirWatcher and eventHook are test seams: what makes the plugin
	// directory's watcher (nil: dirwatch.New), and a hook the populator
	// calls on each watcher event.
	newDirWatcher dirwatch.NewFunc
	eventHook     func(dirwatch.Event)
}

func (o Options) withDefaults() Options {
	setDuration(&o.MinScanInterval, DefaultMinScanInterval)
	setDuration(&o.InitRetryMin, DefaultInitRetryMin)
	setDuration(&o.InitRetryMax, DefaultInitRetryMax)
	setDuration(&o.InUseRecheckInterval, DefaultInUseRecheckInterval)
	setDuration(&o.DirRetryMin, DefaultDirRetryMin)
	setDuration(&o.DirRetryMax, DefaultDirRetryMax)
	setDuration(&o.InitialSyncTimeout, DefaultInitialSyncTimeout)
	if o.SettleWait == 0 {
		o.SettleWait = DefaultSettleWait
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.newDirWatcher == nil {
		o.newDirWatcher = dirwatch.New
	}
	return o
}

func setDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}
