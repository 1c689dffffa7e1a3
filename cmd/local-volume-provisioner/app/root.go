package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
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
