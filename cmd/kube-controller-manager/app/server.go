package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	restclient "k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	cmfeatures "k8s.io/controller-manager/pkg/features"
	"k8s.io/controller-manager/pkg/leadermigration"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"

	"github.com/nodeplug/nodeplug/pkg/version"
)

const componentName = "kube-controller-manager"

var errLeaderMigration = errors.New("nodeplug's --experimental-* flags cannot be combined with leader migration " +
	"(--enable-leader-migration); run upstream behaviour by dropping the nodeplug flags")

// NewControllerManagerCommand returns the controller-manager command:
// upstream's flag sets plus a "nodeplug" section with the flags of the
// designs compiled in (none without designs).
func NewControllerManagerCommand() *cobra.Command {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		klog.Background().Error(err, "Unable to initialize command options")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	np := NewNodeplugOptions()
	cmd := &cobra.Command{
		Use: componentName,
		Long: `kube-controller-manager is nodeplug's build of the Kubernetes controller manager:
upstream's controllers, with nodeplug's experimental storage features available behind
--experimental-* flags. With none of those flags set it runs upstream's code unchanged.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			restclient.SetDefaultWarningHandler(restclient.NoWarnings{})
			return s.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, s, np)
		},
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	named := s.Flags(upstream.KnownControllers(), upstream.ControllersDisabledByDefault(), upstream.ControllerAliases())
	s.ParsedFlags = &named
	verflag.AddFlags(named.FlagSet("global"))
	globalflag.AddGlobalFlags(named.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	if np.HasFlags() {
		np.AddFlags(named.FlagSet("nodeplug"))
	}
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, named, cols)
	return cmd
}

func run(cmd *cobra.Command, s *options.KubeControllerManagerOptions, np *NodeplugOptions) error {
	if v := cmd.Flags().Lookup("version"); v != nil && v.Value.String() != "false" {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", version.String(), np.VersionLine())
		return nil
	}
	verflag.PrintAndExitIfRequested()
	if err := logsapi.ValidateAndApply(s.Logs, utilfeature.DefaultFeatureGate); err != nil {
		return err
	}
	cliflag.PrintFlags(cmd.Flags())
	ctx := context.Background()
	c, err := s.Config(ctx, upstream.KnownControllers(), upstream.ControllersDisabledByDefault(), upstream.ControllerAliases())
	if err != nil {
		return err
	}
	flexDir := c.ComponentConfig.PersistentVolumeBinderController.VolumeConfiguration.FlexVolumePluginDir
	if errs := np.Validate(leadermigration.Enabled(&c.ComponentConfig.Generic), flexDir); len(errs) > 0 {
		return errors.Join(errs...)
	}
	gate := s.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	gate.(featuregate.MutableFeatureGate).AddMetrics()
	s.ComponentGlobalsRegistry.AddMetrics()
	if utilfeature.DefaultFeatureGate.Enabled(cmfeatures.ControllerManagerReleaseLeaderElectionLockOnExit) {
		ctx = server.SetupSignalContext()
	}
	if !np.Enabled() {
		return upstream.Run(ctx, c.Complete())
	}
	return Run(ctx, c.Complete(), np.VolumeHooks())
}
