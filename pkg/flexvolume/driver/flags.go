package driver

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// AddTimeoutFlags registers the flags that bound driver calls, for the
// kubelet and the controller-manager alike: --experimental-flex-call-timeout
// (Config.CallTimeout) and --experimental-flex-init-timeout
// (Config.InitTimeout).
func AddTimeoutFlags(fs *pflag.FlagSet, call, init *time.Duration) {
	fs.DurationVar(call, "experimental-flex-call-timeout", *call,
		"Bound of every flexvolume driver call of nodeplug's discovery except init and waitforattach; the driver's process group is killed "+
			"after it, and a mountdevice or mount it half made is unmounted before the next try. 0 (the default) sets none, as upstream: "+
			"a driver may format a large disk or wait for a slow backend.")
	fs.DurationVar(init, "experimental-flex-init-timeout", *init,
		"Bound of a flexvolume driver's init, which nodeplug's discovery runs when a driver is installed or changed (0: 30s).")
}

// ValidateTimeouts checks the values of the flags AddTimeoutFlags adds.
func ValidateTimeouts(call, init time.Duration) []error {
	var errs []error
	if call < 0 {
		errs = append(errs, fmt.Errorf("--experimental-flex-call-timeout: %v is negative (0 sets none)", call))
	}
	if init < 0 {
		errs = append(errs, fmt.Errorf("--experimental-flex-init-timeout: %v is negative", init))
	}
	return errs
}

// AddFlags registers the timeout flags (AddTimeoutFlags) for c's
// CallTimeout and InitTimeout.
func (c *Config) AddFlags(fs *pflag.FlagSet) { AddTimeoutFlags(fs, &c.CallTimeout, &c.InitTimeout) }

// ValidateFlags checks c's CallTimeout and InitTimeout (ValidateTimeouts).
func (c *Config) ValidateFlags() []error { return ValidateTimeouts(c.CallTimeout, c.InitTimeout) }
