package app

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// NewCommand returns the root command with every subcommand.
func NewCommand() *cobra.Command {
	logging := logsapi.NewLoggingConfiguration()
	cmd := &cobra.Command{
		Use:          "local-volume-provisioner",
		Short:        "Distributed static provisioner of local PersistentVolumes",
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			logs.InitLogs()
			return logsapi.ValidateAndApply(logging, nil)
		},
	}
	cmd.SetGlobalNormalizationFunc(cliflag.WordSepNormalizeFunc)
	logsapi.AddFlags(logging, cmd.PersistentFlags())
	cmd.AddCommand(newDiscoverCommand(), newCleanupCommand(), newMasterCommand(), newWatcherCommand())
	return cmd
}

// ExitError is a failure that ends the process with its own exit code
// rather than 1 (see Run).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Run runs the command as component-base's cli.Run does (which prints the
// error and returns 1), and returns the Code of an *ExitError that a
// subcommand failed with instead of 1.
func Run(cmd *cobra.Command) int {
	var exit *ExitError
	capture(cmd, &exit)
	code := cli.Run(cmd)
	if code != 0 && exit != nil {
		return exit.Code
	}
	return code
}

// capture makes cmd and its subcommands record an *ExitError they return.
func capture(cmd *cobra.Command, exit **ExitError) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			errors.As(err, exit)
			return err
		}
	}
	for _, sub := range cmd.Commands() {
		capture(sub, exit)
	}
}

// maxTerminationMessage is what the kubelet keeps of a termination message.
const maxTerminationMessage = 4096

// writeTerminationMessage writes msg where the kubelet reads a container's
// termination message. An empty path disables it.
func writeTerminationMessage(path, msg string) error {
	if path == "" {
		return nil
	}
	if len(msg) > maxTerminationMessage {
		msg = msg[:maxTerminationMessage]
	}
	if err := os.WriteFile(path, []byte(msg), 0o644); err != nil {
		return fmt.Errorf("failed to write termination message %s: %w", path, err)
	}
	return nil
}

// jobFailure records err as the Job's termination message and returns it.
func jobFailure(path string, err error) error {
	if werr := writeTerminationMessage(path, strings.TrimSpace(err.Error())); werr != nil {
		return fmt.Errorf("%w (and %w)", err, werr)
	}
	return err
}
