//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/statusz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	v1core "k8s.io/client-go/kubernetes/typed/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/metrics/prometheus/slis"
	utilversion "k8s.io/component-base/version"
	zpagesfeatures "k8s.io/component-base/zpages/features"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/pkg/clientbuilder"
	cmfeatures "k8s.io/controller-manager/pkg/features"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"
	"k8s.io/klog/v2"
	configv1alpha1 "k8s.io/kube-controller-manager/config/v1alpha1"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	configv1alpha1conversion "k8s.io/kubernetes/pkg/controller/apis/config/v1alpha1"
	kubefeatures "k8s.io/kubernetes/pkg/features"
)

// Run stands in for upstream's app.Run when a nodeplug feature is on. It
// keeps upstream's serving (configz, healthz, secure serving, flagz,
// statusz), leader election and controller set; only the volume
// controllers named in volumeControllerNames are built by nodeplug, with
// hooks. Leader migration is refused earlier (NodeplugOptions.Validate).
func Run(ctx context.Context, c *config.CompletedConfig, hooks *VolumeHooks) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting", "version", utilversion.Get(), "nodeplugVolumeHooks", true)

	c.EventBroadcaster.StartStructuredLogging(0)
	c.EventBroadcaster.StartRecordingToSink(&v1core.EventSinkImpl{Interface: c.Client.CoreV1().Events("")})
	defer c.EventBroadcaster.Shutdown()
	if err := publishConfigz(c); err != nil {
		return err
	}
	var electionChecker *leaderelection.HealthzAdaptor
	var checks []healthz.HealthChecker
	if c.ComponentConfig.Generic.LeaderElection.LeaderElect {
		electionChecker = leaderelection.NewLeaderHealthzAdaptor(upstreamLeaderHealthzTimeout)
		checks = append(checks, electionChecker)
	}
	healthzHandler := controllerhealthz.NewMutableHealthzHandler(checks...)
	unsecuredMux, err := serve(ctx, c, healthzHandler)
	if err != nil {
		return err
	}
	clientBuilder, rootClientBuilder := clientBuilders(c)
	runControllers := func(ctx context.Context) error {
		return runAll(ctx, c, hooks, rootClientBuilder, clientBuilder, unsecuredMux, healthzHandler)
	}
	if !c.ComponentConfig.Generic.LeaderElection.LeaderElect {
		return runControllers(ctx)
	}
	return leadAndRun(ctx, c, electionChecker, healthzHandler, runControllers)
}

// publishConfigz serves the effective configuration on /configz, as
// upstream does.
func publishConfigz(c *config.CompletedConfig) error {
	external := &configv1alpha1.KubeControllerManagerConfiguration{}
	if err := configv1alpha1conversion.Convert_config_KubeControllerManagerConfiguration_To_v1alpha1_KubeControllerManagerConfiguration(
		&c.ComponentConfig, external, nil); err != nil {
		return fmt.Errorf("unable to convert configz: %w", err)
	}
	external.SetGroupVersionKind(configv1alpha1.SchemeGroupVersion.WithKind("KubeControllerManagerConfiguration"))
	cfgz, err := configz.New(upstream.ConfigzName)
	if err != nil {
		return fmt.Errorf("unable to register configz: %w", err)
	}
	if err := cfgz.Set(external); err != nil {
		return fmt.Errorf("unable to set configz: %w", err)
	}
	return nil
}

// serve starts secure serving of healthz, metrics, debug, flagz and
// statusz, when configured. It returns the mux controllers may add
// debug handlers to (nil when not serving).
func serve(ctx context.Context, c *config.CompletedConfig, h *controllerhealthz.MutableHealthzHandler) (*mux.PathRecorderMux, error) {
	if c.SecureServing == nil {
		return nil, nil
	}
	m := genericcontrollermanager.NewBaseHandler(&c.ComponentConfig.Generic.Debugging, h)
	slis.SLIMetricsWithReset{}.Install(m)
	if utilfeature.DefaultFeatureGate.Enabled(zpagesfeatures.ComponentFlagz) && c.Flagz != nil {
		flagz.Install(m, componentName, c.Flagz)
	}
	if utilfeature.DefaultFeatureGate.Enabled(zpagesfeatures.ComponentStatusz) {
		statusz.Install(m, componentName, statusz.NewRegistry(
			c.ComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent),
			statusz.WithListedPaths(m.ListedPaths())))
	}
	handler := genericcontrollermanager.BuildHandlerChain(m, &c.Authorization, &c.Authentication)
	if _, _, err := c.SecureServing.Serve(handler, 0, ctx.Done()); err != nil {
		return nil, fmt.Errorf("secure serving: %w", err)
	}
	return m, nil
}

// clientBuilders stands in for upstream's unexported createClientBuilders:
// controllers get per-controller service-account credentials when asked
// to, the token controller always gets the root credentials.
func clientBuilders(c *config.CompletedConfig) (client, root clientbuilder.ControllerClientBuilder) {
	root = clientbuilder.SimpleControllerClientBuilder{ClientConfig: c.Kubeconfig}
	if !c.ComponentConfig.KubeCloudShared.UseServiceAccountCredentials {
		return root, root
	}
	return clientbuilder.NewDynamicClientBuilder(restclient.AnonymousClientConfig(c.Kubeconfig),
		c.Client.CoreV1(), "kube-system"), root
}

// leadAndRun stands in for upstream's leaderElectAndRun (without leader
// migration): run holds the lease's lifetime.
func leadAndRun(ctx context.Context, c *config.CompletedConfig, checker *leaderelection.HealthzAdaptor,
	h *controllerhealthz.MutableHealthzHandler, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("leader election identity: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	le := c.ComponentConfig.Generic.LeaderElection
	if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.CoordinatedLeaderElection) {
		if err := startLeaseCandidate(ctx, c, id, h); err != nil {
			return err
		}
	}
	lock, err := resourcelock.NewFromKubeconfig(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: c.EventRecorder}, c.Kubeconfig, le.RenewDeadline.Duration)
	if err != nil {
		return fmt.Errorf("creating leader election lock: %w", err)
	}
	releaseOnExit := utilfeature.DefaultFeatureGate.Enabled(cmfeatures.ControllerManagerReleaseLeaderElectionLockOnExit)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs []error
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, Name: le.ResourceName, WatchDog: checker, ReleaseOnCancel: releaseOnExit,
		LeaseDuration: le.LeaseDuration.Duration, RenewDeadline: le.RenewDeadline.Duration, RetryPeriod: le.RetryPeriod.Duration,
		Coordinated: utilfeature.DefaultFeatureGate.Enabled(kubefeatures.CoordinatedLeaderElection),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer cancel()
				if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
					errs = append(errs, err)
				}
			},
			OnStoppedLeading: func() {
				logger.Error(nil, "Leader election lost or stopped")
				if !releaseOnExit {
					klog.FlushAndExit(klog.ExitFlushTimeout, 1)
				}
			},
		},
	})
	return utilerrors.NewAggregate(errs)
}
