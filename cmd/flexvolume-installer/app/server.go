package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/installer"
)

// Main runs the command with args and returns the exit code; the caller
// flushes the logs (klog.FlushAndExit).
func Main(args []string) int {
	cmd := NewInstallerCommand()
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "flexvolume-installer:", err)
		return 1
	}
	return 0
}

// NewInstallerCommand returns the flexvolume-installer command.
func NewInstallerCommand() *cobra.Command {
	opts := NewOptions()
	cmd := &cobra.Command{
		Use:   "flexvolume-installer --driver <vendor>/<driver>=<file> [--driver ...]",
		Short: "Install flexvolume drivers atomically, then wait for SIGTERM",
		Long: "flexvolume-installer copies each driver file into <plugin-dir>/<vendor>~<driver>/<driver> " +
			"without ever exposing a partial file (write a dotfile, fsync, chmod, rename), " +
			"then waits for SIGTERM so that it can run as a DaemonSet.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return Run(ctx, opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	logFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(logFlags)
	for _, name := range []string{"v", "vmodule"} {
		cmd.Flags().AddGoFlag(logFlags.Lookup(name))
	}
	return cmd
}

// Run installs the drivers, then, with --wait, waits for ctx to end and,
// with --remove-on-exit, removes what is still its own. With
// --health-address it serves /healthz, and /readyz once every driver is
// installed and still in place. opts must be valid.
func Run(ctx context.Context, opts *Options) error {
	logger := klog.FromContext(ctx)
	specs, err := opts.DriverSpecs()
	if err != nil {
		return err
	}
	mode, err := opts.FileMode()
	if err != nil {
		return err
	}
	ready := &readiness{}
	if opts.HealthAddress != "" {
		if err := serveHealth(ctx, opts.HealthAddress, ready); err != nil {
			return err
		}
	}
	var installed []*installer.Installed
	for _, spec := range specs {
		in, err := installer.Install(opts.PluginDir, spec, mode)
		if err != nil {
			return err
		}
		logger.Info("Installed flexvolume driver", "driver", spec.Name.PluginName(), "path", in.Path)
		installed = append(installed, in)
	}
	ready.set(installed)
	if !opts.Wait {
		return nil
	}
	<-ctx.Done()
	if !opts.RemoveOnExit {
		return nil
	}
	for _, in := range installed {
		removed, err := in.Remove()
		switch {
		case err != nil:
			logger.Error(err, "Removing flexvolume driver failed", "driver", in.Spec.Name.PluginName())
		case removed:
			logger.Info("Removed flexvolume driver", "driver", in.Spec.Name.PluginName(), "path", in.Path)
		default:
			logger.Info("Left flexvolume driver in place: it was replaced since", "driver", in.Spec.Name.PluginName())
		}
	}
	return nil
}
