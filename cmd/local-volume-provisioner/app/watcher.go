package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app/options"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/discovery"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/watcher"
)

func newWatcherCommand() *cobra.Command {
	o := options.NewWatcherOptions()
	cmd := &cobra.Command{
		Use:   "watcher",
		Short: "Run the per-node watcher that tells the master when discovery directories change",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return runWatcher(cmd.Context(), o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runWatcher(ctx context.Context, o *options.WatcherOptions) error {
	logger := klog.FromContext(ctx)
	cfg, warnings, err := config.LoadDir(o.ConfigDir)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		logger.Info("Configuration warning", "warning", w)
	}
	var classes []discovery.ClassSpec
	for _, name := range cfg.ClassNames() {
		classes = append(classes, discovery.SpecFor(name, cfg.StorageClassMap[name]))
	}
	rc, err := restConfig(o.Kubeconfig, 5, 10)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("failed to create dynamic client: %w", err)
	}
	metrics.Register()
	serveMetrics(ctx, o.MetricsAddress, nil)
	w := watcher.New(watcher.Options{Classes: classes, Resync: o.Resync, Debounce: o.Debounce},
		&discovery.Scanner{}, watcher.NewNotifier(dyn, o.NodeName, clock.RealClock{}))
	return w.Run(ctx)
}
