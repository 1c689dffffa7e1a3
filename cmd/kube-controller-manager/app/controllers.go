//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/blang/semver/v4"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/tools/leaderelection"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/controller-manager/pkg/clientbuilder"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	serviceaccountcontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// upstreamLeaderHealthzTimeout is the grace upstream gives an expired lease
// before /healthz fails.
const upstreamLeaderHealthzTimeout = 20 * time.Second

// runAll builds and runs every enabled controller: the service-account
// token controller first (other controllers' credentials depend on it),
// upstream's descriptors minus the volume controllers nodeplug builds, and
// nodeplug's volume controllers.
func runAll(ctx context.Context, c *config.CompletedConfig, hooks *VolumeHooks,
	root, clients clientbuilder.ControllerClientBuilder, m *mux.PathRecorderMux, h *controllerhealthz.MutableHealthzHandler) error {
	cc, err := upstream.CreateControllerContext(ctx, c, root, clients)
	if err != nil {
		return fmt.Errorf("building controller context: %w", err)
	}
	descriptors := upstream.NewControllerDescriptors()
	// Upstream's map holds a token-controller descriptor without the root
	// client builder (upstream's Run replaces it); nodeplug builds its own.
	delete(descriptors, names.ServiceAccountTokenController)
	own, err := hooks.buildVolumeControllers(ctx, cc, descriptors)
	if err != nil {
		return err
	}
	controllers, err := upstream.BuildControllers(ctx, cc, descriptors, m, h)
	if err != nil {
		return fmt.Errorf("building controllers: %w", err)
	}
	token, err := newTokenController(ctx, cc, root)
	if err != nil {
		return err
	}
	if token != nil {
		controllers = append([]upstream.Controller{token}, controllers...)
	}
	for _, ctrl := range own {
		controllers = append(controllers, ctrl)
		h.AddHealthChecker(controllerhealthz.NamedPingChecker(ctrl.Name()))
	}
	cc.InformerFactory.StartWithContext(ctx)
	defer cc.InformerFactory.Shutdown()
	// informerfactory.InformerFactory (object or metadata informers) has no
	// StartWithContext.
	cc.ObjectOrMetadataInformerFactory.Start(ctx.Done())
	close(cc.InformersStarted)
	if !upstream.RunControllers(ctx, cc, controllers, upstream.ControllerStartJitter, c.ControllerShutdownTimeout) {
		return errors.New("controller shutdown timeout reached")
	}
	return nil
}

// newTokenController stands in for upstream's unexported
// newServiceAccountTokenController: it mints legacy service-account token
// secrets with the root credentials. It returns nil when no signing key is
// configured, as upstream does.
func newTokenController(ctx context.Context, cc upstream.ControllerContext, root clientbuilder.ControllerClientBuilder) (upstream.Controller, error) {
	sa := cc.ComponentConfig.SAController
	if sa.ServiceAccountKeyFile == "" {
		klog.FromContext(ctx).Info("Controller is disabled because there is no private key", "controller", names.ServiceAccountTokenController)
		return nil, nil
	}
	key, err := keyutil.PrivateKeyFromFile(sa.ServiceAccountKeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading service account signing key: %w", err)
	}
	rootCA, err := tokenRootCA(sa.RootCAFile, root)
	if err != nil {
		return nil, err
	}
	client, err := root.Client("tokens-controller")
	if err != nil {
		return nil, fmt.Errorf("client for tokens-controller: %w", err)
	}
	generator, err := serviceaccount.JWTTokenGenerator(serviceaccount.LegacyIssuer, key)
	if err != nil {
		return nil, fmt.Errorf("building token generator: %w", err)
	}
	tokens, err := serviceaccountcontroller.NewTokensController(klog.FromContext(ctx),
		cc.InformerFactory.Core().V1().ServiceAccounts(), cc.InformerFactory.Core().V1().Secrets(), client,
		serviceaccountcontroller.TokensControllerOptions{TokenGenerator: generator, RootCA: rootCA})
	if err != nil {
		return nil, fmt.Errorf("creating tokens controller: %w", err)
	}
	workers := int(sa.ConcurrentSATokenSyncs)
	return namedController{name: names.ServiceAccountTokenController, run: func(ctx context.Context) { tokens.Run(ctx, workers) }}, nil
}

// tokenRootCA returns the CA bundle put into token secrets: --root-ca-file
// when set, else the CA of the controller-manager's own kubeconfig.
func tokenRootCA(file string, root clientbuilder.ControllerClientBuilder) ([]byte, error) {
	if file == "" {
		cfg, err := root.Config("tokens-controller")
		if err != nil {
			return nil, fmt.Errorf("client config for tokens-controller: %w", err)
		}
		return cfg.CAData, nil
	}
	ca, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--root-ca-file: %w", err)
	}
	if _, err := certutil.ParseCertsPEM(ca); err != nil {
		return nil, fmt.Errorf("--root-ca-file %q: %w", file, err)
	}
	return ca, nil
}

// startLeaseCandidate joins coordinated leader election, as upstream does
// when the CoordinatedLeaderElection gate is on.
func startLeaseCandidate(ctx context.Context, c *config.CompletedConfig, id string, h *controllerhealthz.MutableHealthzHandler) error {
	v := c.ComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent)
	binary, err := semver.ParseTolerant(v.BinaryVersion().String())
	if err != nil {
		return fmt.Errorf("binary version: %w", err)
	}
	emulation, err := semver.ParseTolerant(v.EmulationVersion().String())
	if err != nil {
		return fmt.Errorf("emulation version: %w", err)
	}
	candidate, synced, err := leaderelection.NewCandidate(c.Client, "kube-system", id, componentName,
		binary.FinalizeVersion(), emulation.FinalizeVersion(), coordinationv1.OldestEmulationVersion)
	if err != nil {
		return fmt.Errorf("lease candidate: %w", err)
	}
	h.AddHealthChecker(healthz.NewInformerSyncHealthz(synced))
	go candidate.Run(ctx)
	return nil
}

// namedController adapts a run function to upstream's Controller interface.
type namedController struct {
	name string
	run  func(context.Context)
}

func (n namedController) Name() string            { return n.name }
func (n namedController) Run(ctx context.Context) { n.run(ctx) }

var _ upstream.Controller = namedController{}
