package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/flagz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	zpagesfeatures "k8s.io/component-base/zpages/features"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"

	"github.com/nodeplug/nodeplug/pkg/version"
)

const componentName = "kubelet"

// command holds everything one kubelet invocation parses into.
type command struct {
	flags    *options.KubeletFlags
	config   *kubeletconfig.KubeletConfiguration
	nodeplug *NodeplugOptions
	// upstreamFlags are exactly upstream's flags; nodeplugFlags are ours;
	// all is their union, which is what the command line is parsed with.
	upstreamFlags, nodeplugFlags, all *pflag.FlagSet
}

// NewKubeletCommand returns the kubelet command. Its flags are upstream's,
// registered by upstream's options package, plus nodeplug's own section.
func NewKubeletCommand(ctx context.Context) *cobra.Command {
	c, err := newCommand()
	if err != nil {
		// Only a programming error (bad defaults) can get here.
		klog.FromContext(ctx).Error(err, "Failed to build the kubelet's default configuration")
		os.Exit(1)
	}
	cmd := &cobra.Command{
		Use: componentName,
		Long: `kubelet is nodeplug's build of the Kubernetes node agent: upstream's kubelet
with nodeplug's experimental storage features available behind --experimental-* flags.
With none of those flags set it runs upstream's kubelet with upstream's dependencies
unchanged. Only its start-up command differs from upstream's, in what it logs and
prints: some start-up messages are worded differently (an unknown --experimental-*
flag lists nodeplug's flags); as non-root it logs "Kubelet is not running as root"
instead of upstream's insufficient-permissions error; --version prints both
upstream's and nodeplug's versions and the nodeplug designs compiled in; and --help
shows this text and adds a "nodeplug flags" section with the flags of those designs
(none in a build without designs).`,
		// Flag precedence (command line over --config) needs the raw args,
		// so cobra must not parse them.
		DisableFlagParsing: true,
		SilenceUsage:       true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.run(ctx, cmd, args)
		},
	}
	cmd.SetUsageFunc(func(cmd *cobra.Command) error {
		fmt.Fprint(cmd.OutOrStderr(), c.usage(cmd))
		return nil
	})
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n\n%s", cmd.Long, c.usage(cmd))
	})
	return cmd
}

func newCommand() (*command, error) {
	c := &command{flags: options.NewKubeletFlags(), nodeplug: NewNodeplugOptions()}
	var err error
	if c.config, err = options.NewKubeletConfiguration(); err != nil {
		return nil, err
	}
	c.upstreamFlags = pflag.NewFlagSet(componentName, pflag.ContinueOnError)
	c.upstreamFlags.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	c.flags.AddFlags(c.upstreamFlags)
	options.AddKubeletConfigFlags(c.upstreamFlags, c.config)
	options.AddGlobalFlags(c.upstreamFlags)
	c.upstreamFlags.BoolP("help", "h", false, "help for "+componentName)
	c.nodeplugFlags = c.nodeplug.NamedFlagSet()

	c.all = pflag.NewFlagSet(componentName, pflag.ContinueOnError)
	c.all.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	c.all.AddFlagSet(c.upstreamFlags)
	c.all.AddFlagSet(c.nodeplugFlags)
	return c, nil
}

// usage prints upstream's flags, then the "nodeplug flags" section when a
// design with flags is compiled in.
func (c *command) usage(cmd *cobra.Command) string {
	u := fmt.Sprintf("Usage:\n  %s\n\nFlags:\n%s", cmd.UseLine(), c.upstreamFlags.FlagUsagesWrapped(2))
	if c.nodeplugFlags.HasFlags() {
		u += "\nnodeplug flags:\n" + c.nodeplugFlags.FlagUsagesWrapped(2)
	}
	return u
}

// run is the kubelet's start-up, in upstream's order: parse, short-circuit
// --help and --version, validate flags, load config, set up logging, log the
// configuration in effect, validate config (and log an unsupported cgroup
// layout), build dependencies, let nodeplug customise them, run.
func (c *command) run(ctx context.Context, cmd *cobra.Command, args []string) error {
	if err := c.all.Parse(args); err != nil {
		return c.parseError(err)
	}
	if rest := c.all.Args(); len(rest) > 0 {
		return fmt.Errorf("unknown command %q: the kubelet takes flags only", rest[0])
	}
	if help, _ := c.all.GetBool("help"); help {
		return cmd.Help()
	}
	if v := c.all.Lookup("version"); v != nil && v.Value.String() != "false" {
		// Standard output holds upstream's line alone, as kubeadm's
		// preflight parses it; nodeplug's lines go to standard error.
		fmt.Fprintln(cmd.OutOrStdout(), version.Upstream())
		fmt.Fprintf(cmd.ErrOrStderr(), "%s\n%s\n", version.Nodeplug(), c.nodeplug.VersionLine())
		return nil
	}
	server, skipped, err := c.complete(ctx, args)
	if err != nil {
		return err
	}
	deps, err := upstream.UnsecuredDependencies(ctx, server, utilfeature.DefaultFeatureGate)
	if err != nil {
		return fmt.Errorf("failed to construct kubelet dependencies: %w", err)
	}
	if utilfeature.DefaultFeatureGate.Enabled(zpagesfeatures.ComponentFlagz) {
		deps.Flagz = flagz.NamedFlagSetsReader{FlagSets: cliflag.NamedFlagSets{
			FlagSets: map[string]*pflag.FlagSet{componentName: c.all}}}
	}
	logger := klog.FromContext(ctx)
	if uid := os.Getuid(); uid != 0 {
		logger.Error(nil, "Kubelet is not running as root", "uid", uid)
	}
	for _, f := range skipped {
		logger.V(4).Info("Skipped file in drop-in directory (does not have .conf extension)", "file", f)
	}
	ctx = genericapiserver.SetupSignalContext()
	if err := CustomizeDependencies(ctx, server, deps, c.nodeplug); err != nil {
		return fmt.Errorf("nodeplug: %w", err)
	}
	utilfeature.DefaultMutableFeatureGate.AddMetrics()
	return upstream.Run(ctx, server, deps, utilfeature.DefaultFeatureGate)
}

// complete validates flags and config and returns the KubeletServer, and the
// files of --config-dir it skipped.
func (c *command) complete(ctx context.Context, args []string) (*options.KubeletServer, []string, error) {
	gates := utilfeature.DefaultMutableFeatureGate
	if err := gates.SetFromMap(c.config.FeatureGates); err != nil {
		return nil, nil, fmt.Errorf("failed to set feature gates from flags: %w", err)
	}
	if err := options.ValidateKubeletFlags(c.flags); err != nil {
		return nil, nil, fmt.Errorf("failed to validate kubelet flags: %w", err)
	}
	if err := c.nodeplug.Validate(c.flags.RootDirectory); err != nil {
		return nil, nil, err
	}
	kc, skipped, err := loadConfig(ctx, c.flags, c.config, c.all, args)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to load kubelet config: %w", err)
	}
	if err := gates.SetFromMap(kc.FeatureGates); err != nil {
		return nil, nil, fmt.Errorf("failed to set feature gates from config: %w", err)
	}
	logs.InitLogs()
	if err := logsapi.ValidateAndApplyAsField(&kc.Logging, utilfeature.DefaultFeatureGate, field.NewPath("logging")); err != nil {
		return nil, nil, fmt.Errorf("initialize logging: %w", err)
	}
	logger := klog.FromContext(ctx)
	logEffectiveConfig(logger, kc)
	cliflag.PrintFlags(c.all)
	if err := kubeletconfigvalidation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate); err != nil {
		return nil, nil, fmt.Errorf("failed to validate kubelet configuration: %w", err)
	}
	warnKubeletCgroupOutsideReserved(logger, kc)
	return &options.KubeletServer{KubeletFlags: *c.flags, KubeletConfiguration: *kc}, skipped, nil
}

// parseError makes an unknown --experimental-* flag name nodeplug's flags,
// or say that no design is compiled in.
func (c *command) parseError(err error) error {
	if unknown, ok := errors.AsType[*pflag.NotExistError](err); ok && c.isNodeplugName(unknown.GetSpecifiedName()) {
		var known []string
		c.nodeplugFlags.VisitAll(func(f *pflag.Flag) { known = append(known, "--"+f.Name) })
		if len(known) == 0 {
			return fmt.Errorf("failed to parse kubelet flag: %w (this kubelet was built without nodeplug's designs: %s)", err, c.nodeplug.VersionLine())
		}
		return fmt.Errorf("failed to parse kubelet flag: %w (nodeplug's flags are: %s; %s)", err, strings.Join(known, ", "), c.nodeplug.VersionLine())
	}
	if errors.Is(err, pflag.ErrHelp) {
		return err
	}
	return fmt.Errorf("failed to parse kubelet flag: %w", err)
}

// isNodeplugName reports whether a flag name, as typed, is in nodeplug's
// --experimental-* namespace once normalised (--experimental_x is
// --experimental-x).
func (c *command) isNodeplugName(name string) bool {
	return strings.HasPrefix(string(c.all.GetNormalizeFunc()(c.all, name)), "experimental-")
}
