package pluginwatcher

import (
	"cmp"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"

	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/reconciler"
	"github.com/nodeplug/nodeplug/pkg/kubelet/pluginwatcher/report"
	"github.com/nodeplug/nodeplug/pkg/util/dirwatch"
)

// Defaults for Options. They are part of the wire contract (README.md).
const (
	DefaultDialTimeout   = 1 * time.Second
	DefaultRPCTimeout    = 5 * time.Second
	DefaultRetryBase     = 10 * time.Millisecond
	DefaultRetryMax      = 2 * time.Minute
	DefaultStaleAttempts = 5
	DefaultStaleGrace    = 1 * time.Second
	DefaultThrottleRate  = 1.0
	DefaultThrottleBurst = 5
	DefaultMaxInFlight   = 1024
	DefaultSuspectAfter  = 1 * time.Second
	DefaultLogInterval   = 10 * time.Second
	DefaultLogBudget     = 10
)

// Options configures a Watcher. The zero value of every field selects the
// documented default.
type Options struct {
	// DialTimeout bounds the unix-socket connect. Default 1s.
	DialTimeout time.Duration
	// RPCTimeout bounds GetInfo and NotifyRegistrationStatus. Default 5s.
	RPCTimeout time.Duration
	// RetryBase and RetryMax shape the per-socket exponential backoff used
	// after any failure (dial, GetInfo, handler, notify). Defaults 10ms, 2m.
	RetryBase time.Duration
	RetryMax  time.Duration
	// StaleAttempts is how many consecutive "connection refused" results,
	// spread over at least StaleGrace, make a socket stale; a stale socket
	// file is deleted. Sockets that accept but answer slowly are never
	// deleted. Defaults 5 and 1s. A negative StaleAttempts disables removal.
	StaleAttempts int
	StaleGrace    time.Duration
	// ThrottleRate (registrations per second) and ThrottleBurst configure the
	// token bucket kept per plugin name. Defaults 1/s and 5.
	ThrottleRate  float64
	ThrottleBurst int
	// MaxInFlight bounds the registration attempts in progress at once:
	// sockets being dialled, asked GetInfo or notified, and handler calls.
	// Each attempt is a goroutine holding at most one file descriptor (its
	// connection to the socket), so the limit is sized in file descriptors,
	// not CPUs: a socket that never answers holds its slot for up to
	// DialTimeout+RPCTimeout without using any CPU. Default 1024.
	MaxInFlight int
	// SuspectInFlight bounds the attempts of suspect sockets: sockets whose
	// last failed attempt held its slot for at least SuspectAfter (timed
	// out, stalled, or answered very slowly and then failed). The other
	// MaxInFlight-SuspectInFlight slots stay free for first attempts and
	// for sockets that never stalled. Must be below MaxInFlight. Default
	// MaxInFlight/4.
	SuspectInFlight int
	// SuspectAfter is how long a failed attempt may hold its slot before
	// its socket becomes suspect. A suspect socket is retried no sooner than
	// the time its failed attempt held the slot, doubled for every earlier
	// slow failure (up to RetryMax). Must be positive and at most
	// RPCTimeout. Default 1s.
	SuspectAfter time.Duration
	// IdentityPolicy is applied when the socket name does not carry the
	// plugin name. Default IdentityWarn, so that existing plugins with
	// free-form socket names keep working.
	IdentityPolicy IdentityPolicy
	// PluginClientTimeout is passed to Handler.RegisterPlugin. nil lets the
	// handler use its own default.
	PluginClientTimeout *time.Duration
	// LogInterval and LogBudget rate-limit the watcher's logs and events:
	// one line per message and plugin per interval, at most LogBudget lines
	// per interval in total, the rest summarised. Defaults 10s and 10.
	// Successful registrations are logged at V(2) outside the budget, and
	// their events have a budget of LogBudget of their own.
	LogInterval time.Duration
	LogBudget   int
	// MetricsRegistry receives the watcher's metrics. nil means
	// k8s.io/component-base/metrics/legacyregistry.
	MetricsRegistry metrics.KubeRegistry
	// Recorder and NodeRef, when both set, receive Node events for
	// registrations, rejections, throttling and stale-socket removal. Events
	// are rate-limited like the logs.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference

	// newDirWatcher makes the directory watcher (nil: dirwatch.New); tests
	// replace it.
	newDirWatcher dirwatch.NewFunc
}

func (o Options) withDefaults() Options {
	o.DialTimeout = cmp.Or(o.DialTimeout, DefaultDialTimeout)
	o.RPCTimeout = cmp.Or(o.RPCTimeout, DefaultRPCTimeout)
	o.RetryBase = cmp.Or(o.RetryBase, DefaultRetryBase)
	o.RetryMax = cmp.Or(o.RetryMax, DefaultRetryMax)
	o.StaleGrace = cmp.Or(o.StaleGrace, DefaultStaleGrace)
	o.LogInterval = cmp.Or(o.LogInterval, DefaultLogInterval)
	o.StaleAttempts = cmp.Or(o.StaleAttempts, DefaultStaleAttempts)
	o.ThrottleRate = cmp.Or(o.ThrottleRate, DefaultThrottleRate)
	o.ThrottleBurst = cmp.Or(o.ThrottleBurst, DefaultThrottleBurst)
	o.MaxInFlight = cmp.Or(o.MaxInFlight, DefaultMaxInFlight)
	o.SuspectInFlight = cmp.Or(o.SuspectInFlight, max(o.MaxInFlight/4, 1))
	o.SuspectAfter = cmp.Or(o.SuspectAfter, min(DefaultSuspectAfter, o.RPCTimeout))
	o.LogBudget = cmp.Or(o.LogBudget, DefaultLogBudget)
	o.IdentityPolicy = cmp.Or(o.IdentityPolicy, IdentityWarn)
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.IdentityPolicy != IdentityReject && o.IdentityPolicy != IdentityWarn {
		errs = append(errs, errors.New("identity policy must be Reject or Warn"))
	}
	if o.DialTimeout < 0 || o.RPCTimeout < 0 || o.RetryBase < 0 || o.StaleGrace < 0 || o.LogInterval < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if o.RetryMax < o.RetryBase {
		errs = append(errs, errors.New("retry max must be at least retry base"))
	}
	if o.ThrottleRate < 0 || o.ThrottleBurst < 1 {
		errs = append(errs, errors.New("throttle rate must be positive and burst at least 1"))
	}
	if o.LogBudget < 1 {
		errs = append(errs, errors.New("log budget must be at least 1"))
	}
	if o.SuspectInFlight < 1 || o.MaxInFlight <= o.SuspectInFlight {
		errs = append(errs, errors.New("suspect in-flight limit must be at least 1 and below the in-flight limit"))
	}
	if o.SuspectAfter <= 0 || o.SuspectAfter > o.RPCTimeout {
		errs = append(errs, errors.New("suspect-after must be positive and at most the RPC timeout"))
	}
	return errors.Join(errs...)
}

// reconcilerConfig is the part of o the reconciler applies.
func (o Options) reconcilerConfig() reconciler.Config {
	return reconciler.Config{
		RetryBase:           o.RetryBase,
		RetryMax:            o.RetryMax,
		StaleAttempts:       o.StaleAttempts,
		StaleGrace:          o.StaleGrace,
		SuspectAfter:        o.SuspectAfter,
		IdentityPolicy:      o.IdentityPolicy,
		PluginClientTimeout: o.PluginClientTimeout,
		ThrottleRate:        o.ThrottleRate,
		ThrottleBurst:       o.ThrottleBurst,
	}
}

// reportConfig is the part of o the reporter applies.
func (o Options) reportConfig() report.Config {
	return report.Config{Interval: o.LogInterval, Budget: o.LogBudget, Recorder: o.Recorder, NodeRef: o.NodeRef}
}
