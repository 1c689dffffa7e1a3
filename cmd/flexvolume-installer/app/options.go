package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/installer"
)

// DefaultPluginDir is where the DaemonSet mounts the host's plugin directory.
const DefaultPluginDir = "/flexmnt"

// Options are the installer's flags.
type Options struct {
	// PluginDir is the plugin directory, as mounted in the container.
	PluginDir string
	// Drivers are "<vendor>/<driver>=<file>" (or "<vendor>~<driver>=<file>").
	Drivers []string
	// Mode is the installed executables' octal mode.
	Mode string
	// Wait keeps the installer running until SIGTERM after installing.
	Wait bool
	// RemoveOnExit removes the installed drivers at SIGTERM, each only if
	// the file on disk is still the one this installer wrote.
	RemoveOnExit bool
	// HealthAddress is where /healthz and /readyz are served; empty: not
	// served.
	HealthAddress string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{PluginDir: DefaultPluginDir, Mode: "0755", Wait: true}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PluginDir, "plugin-dir", o.PluginDir,
		"Flexvolume plugin directory to install into (the host's --volume-plugin-dir, mounted into the container).")
	fs.StringArrayVar(&o.Drivers, "driver", o.Drivers,
		"Driver to install, as <vendor>/<driver>=<file>: <file> is installed as <plugin-dir>/<vendor>~<driver>/<driver>. Repeatable.")
	fs.StringVar(&o.Mode, "mode", o.Mode, "Octal file mode of the installed executables.")
	fs.BoolVar(&o.Wait, "wait", o.Wait, "After installing, wait for SIGTERM or SIGINT instead of exiting.")
	fs.BoolVar(&o.RemoveOnExit, "remove-on-exit", o.RemoveOnExit,
		"At SIGTERM, remove each installed driver unless another installer has replaced it since.")
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress,
		"host:port to serve /healthz and /readyz on (ready once every driver is installed and still in place); empty: not served.")
}

// Validate checks the options and returns every problem found.
func (o *Options) Validate() error {
	var errs []error
	if o.PluginDir == "" {
		errs = append(errs, errors.New("--plugin-dir must not be empty"))
	}
	if _, err := o.FileMode(); err != nil {
		errs = append(errs, err)
	}
	if len(o.Drivers) == 0 {
		errs = append(errs, errors.New("at least one --driver is required"))
	}
	if o.HealthAddress != "" && !o.Wait {
		errs = append(errs, errors.New("--health-address needs --wait"))
	}
	if o.HealthAddress != "" {
		if _, _, err := net.SplitHostPort(o.HealthAddress); err != nil {
			errs = append(errs, fmt.Errorf("invalid --health-address %q: want host:port, such as :8080", o.HealthAddress))
		}
	}
	if o.RemoveOnExit && !o.Wait {
		errs = append(errs, errors.New("--remove-on-exit needs --wait"))
	}
	_, err := o.DriverSpecs()
	errs = append(errs, err)
	return errors.Join(errs...)
}

// FileMode parses --mode.
func (o *Options) FileMode() (os.FileMode, error) {
	m, err := strconv.ParseUint(o.Mode, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("invalid --mode %q: want an octal permission such as 0755", o.Mode)
	}
	if m&0o111 == 0 {
		return 0, fmt.Errorf("invalid --mode %q: a driver must be executable", o.Mode)
	}
	return os.FileMode(m), nil
}

// DriverSpecs parses --driver flags.
func (o *Options) DriverSpecs() ([]installer.DriverSpec, error) {
	var specs []installer.DriverSpec
	var errs []error
	seen := map[string]bool{}
	for _, d := range o.Drivers {
		spec, err := installer.ParseDriverSpec(d)
		if err != nil {
			errs = append(errs, fmt.Errorf("--driver %q: %w", d, err))
			continue
		}
		if seen[spec.Name.String()] {
			errs = append(errs, fmt.Errorf("--driver %q: %s given twice", d, spec.Name.PluginName()))
			continue
		}
		seen[spec.Name.String()] = true
		specs = append(specs, spec)
	}
	return specs, errors.Join(errs...)
}
