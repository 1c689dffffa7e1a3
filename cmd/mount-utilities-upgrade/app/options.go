package app

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeplug/nodeplug/pkg/mountpod/upgrade"
)

// pollIntervalEnv sets the default of --poll-interval, in seconds, as it
// did for the shell version of the command.
const pollIntervalEnv = "MU_POLL_INTERVAL"

// maxTimeout is the largest --timeout, in seconds.
const maxTimeout = 9_999_999

// Options are the command's flags and arguments.
type Options struct {
	Namespace  string
	DaemonSet  string
	Timeout    int // seconds
	DryRun     bool
	Kubeconfig string
	// PollInterval is how often a wait looks again.
	PollInterval time.Duration
	// Nodes are the arguments.
	Nodes []string
}

// NewOptions returns the defaults; MU_POLL_INTERVAL (seconds) sets the
// poll interval's.
func NewOptions() *Options {
	o := &Options{Namespace: "kube-mount", DaemonSet: "mount-utilities", Timeout: 300, PollInterval: 2 * time.Second}
	if s, err := strconv.ParseFloat(os.Getenv(pollIntervalEnv), 64); err == nil && s > 0 {
		o.PollInterval = time.Duration(s * float64(time.Second))
	}
	return o
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace of the DaemonSet.")
	fs.StringVar(&o.DaemonSet, "daemonset", o.DaemonSet, "Name of the DaemonSet.")
	fs.IntVar(&o.Timeout, "timeout", o.Timeout, "Limit of each wait in seconds: drain, delete, new pod Ready.")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "Print what it would do; change nothing.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; else $KUBECONFIG, else ~/.kube/config.")
	fs.DurationVar(&o.PollInterval, "poll-interval", o.PollInterval, "How often a wait looks again ($"+pollIntervalEnv+", seconds, sets the default).")
}

// Validate checks the options and returns every problem found.
func (o *Options) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--namespace: '%s' is not a valid name", o.Namespace))
	}
	if msgs := validation.IsDNS1123Subdomain(o.DaemonSet); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--daemonset: '%s' is not a valid name", o.DaemonSet))
	}
	if o.Timeout < 1 || o.Timeout > maxTimeout {
		errs = append(errs, fmt.Errorf("--timeout: '%d' is not a whole number of seconds from 1 to %d", o.Timeout, maxTimeout))
	}
	if o.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("--poll-interval: %v is not positive", o.PollInterval))
	}
	if len(o.Nodes) == 0 {
		errs = append(errs, errors.New("no NODE given"))
	}
	for _, n := range o.Nodes {
		if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("'%s' is not a valid node name", n))
		}
	}
	return errors.Join(errs...)
}

// Config returns the upgrade's configuration.
func (o *Options) Config() upgrade.Config {
	return upgrade.Config{
		Namespace: o.Namespace, DaemonSet: o.DaemonSet, DryRun: o.DryRun,
		Timeout: time.Duration(o.Timeout) * time.Second, PollInterval: o.PollInterval,
	}
}
