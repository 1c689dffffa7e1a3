package options

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// WatcherOptions are the flags of the watcher.
type WatcherOptions struct {
	Kubeconfig     string
	NodeName       string
	ConfigDir      string
	Resync         time.Duration
	Debounce       time.Duration
	MetricsAddress string
}

// NewWatcherOptions returns the defaults; the node name defaults to $NODE_NAME.
func NewWatcherOptions() *WatcherOptions {
	return &WatcherOptions{NodeName: os.Getenv("NODE_NAME"), ConfigDir: "/etc/provisioner/config",
		Resync: time.Minute, Debounce: 100 * time.Millisecond, MetricsAddress: ":8080"}
}

// AddFlags registers the flags.
func (o *WatcherOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty means in-cluster.")
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "Node this watcher runs on (default $NODE_NAME).")
	fs.StringVar(&o.ConfigDir, "config-dir", o.ConfigDir, "Directory where the provisioner ConfigMap is mounted.")
	fs.DurationVar(&o.Resync, "resync-period", o.Resync, "Period of the safety rescan.")
	fs.DurationVar(&o.Debounce, "debounce", o.Debounce, "Delay that groups bursts of file events, and least time between two looks at the disks; a mount after a quiet interval is looked at at once.")
	fs.StringVar(&o.MetricsAddress, "metrics-address", o.MetricsAddress, "Address of /metrics and /healthz; empty disables.")
}

// Validate checks the flags.
func (o *WatcherOptions) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("--node-name (or $NODE_NAME) is required"))
	}
	if o.Resync < time.Second {
		errs = append(errs, errors.New("--resync-period must be at least 1s"))
	}
	if o.Debounce < 0 || o.Debounce > o.Resync {
		errs = append(errs, errors.New("--debounce must be between 0 and --resync-period"))
	}
	return errors.Join(errs...)
}
