package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app/options"
	"github.com/nodeplug/nodeplug/pkg/localpv/cleanup"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

func newDiscoverCommand() *cobra.Command {
	o := options.NewDiscoverOptions()
	cmd := &cobra.Command{
		Use:   "discover",
		Short: "Discovery Job entrypoint: report this node's volumes in the termination message",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return jobFailure(o.TerminationLog, err)
			}
			if err := runDiscover(cmd, o); err != nil {
				return jobFailure(o.TerminationLog, err)
			}
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runDiscover(cmd *cobra.Command, o *options.DiscoverOptions) error {
	ctx := cmd.Context()
	r, err := discovery.NewDiscoverer(&discovery.Scanner{}, o.MountInfo).Discover(ctx, o.NodeName, o.Classes, o.Held)
	if err != nil {
		return err
	}
	r.HeldOmitted += o.HeldOmitted
	msgs, err := report.EncodeOrAsk(r, o.Shards)
	if err != nil {
		return err
	}
	if err := writeTerminationMessage(o.TerminationLog, msgs[o.Shard]); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Discovery finished", "node", o.NodeName, "shard", o.Shard, "bytes", len(msgs[o.Shard]))
	return nil
}

func newCleanupCommand() *cobra.Command {
	o := options.NewCleanupOptions()
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Cleanup Job entrypoint: check the machine and the disk, then wipe one volume",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return jobFailure(o.TerminationLog, err)
			}
			return runCleanup(cmd.Context(), o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runCleanup wipes the volume. On another machine or another disk it wipes
// nothing, writes the mismatch as the termination message and fails with
// exit code jobs.CleanupIdentityMismatchCode.
func runCleanup(ctx context.Context, o *options.CleanupOptions) error {
	checker := &cleanup.NodeChecker{MachineIDFile: o.MachineIDFile, SystemUUIDFile: o.SystemUUIDFile}
	c := cleanup.NewCleaner(&discovery.Scanner{}, checker, o.MountInfo, os.Stdout)
	req := cleanup.Request{Kind: report.VolumeKind(o.Kind), MountDir: o.MountDir, Path: o.Path, Command: o.Command,
		Expected: o.Expected()}
	err := c.Clean(ctx, req)
	var mismatch *cleanup.MismatchError
	switch {
	case errors.As(err, &mismatch):
		klog.FromContext(ctx).Info("Not wiping: another machine or disk than the PV's", "path", o.Path, "mismatch", mismatch.Error())
		msg := mismatch.TerminationMessage()
		return &ExitError{Code: jobs.CleanupIdentityMismatchCode, Err: jobFailure(o.TerminationLog, errors.New(msg))}
	case err != nil:
		return jobFailure(o.TerminationLog, fmt.Errorf("cleanup failed: %w", err))
	}
	return writeTerminationMessage(o.TerminationLog, "cleaned "+o.Path)
}
