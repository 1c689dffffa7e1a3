package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/cmd/local-volume-provisioner/app/options"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
	"github.com/nodeplug/nodeplug/pkg/localpv/nodecleanup"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/wipe"
)

// apiWaitTimeout bounds how long the master waits at start for the
// NodeDiskState CRD to be established before it gives up with an error that
// says what to apply.
const apiWaitTimeout = 30 * time.Second

func newMasterCommand() *cobra.Command {
	o := options.NewMasterOptions()
	cmd := &cobra.Command{
		Use:   "master",
		Short: "Run the master: the only component that writes PersistentVolumes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return runMaster(cmd.Context(), o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func restConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("failed to build client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = "local-volume-provisioner"
	return cfg, nil
}

func runMaster(ctx context.Context, o *options.MasterOptions) error {
	cfg, err := loadConfig(ctx, o, exec.LookPath)
	if err != nil {
		return err
	}
	rc, err := restConfig(o.Kubeconfig, o.KubeAPIQPS, o.KubeAPIBurst)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("failed to create client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("failed to create dynamic client: %w", err)
	}
	// Without the CRD the NodeDiskState informer would never sync: say so
	// and stop, rather than wait with nothing but list errors in the log.
	if err := controller.WaitForNodeDiskStateAPI(ctx, discovery.ToServerResourcesInterfaceWithContext(kube.Discovery()),
		time.Second, apiWaitTimeout); err != nil {
		return err
	}
	metrics.Register()
	ready := &readiness{}
	serveMetrics(ctx, o.MetricsAddress, ready)

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "local-volume-provisioner"})

	run := func(ctx context.Context) error { return runController(ctx, o, cfg, kube, dyn, recorder, ready) }
	if !o.LeaderElect {
		return run(ctx)
	}
	return runLeaderElected(ctx, o, kube, recorder, run)
}

// loadConfig reads the configuration, logs its warnings and, unless
// --check-cleaner-programs=false, rejects block cleaner programs that
// lookPath does not find: the cleanup Jobs run the master's image, so they
// would not find them either.
func loadConfig(ctx context.Context, o *options.MasterOptions, lookPath config.LookPathFunc) (*config.Configuration, error) {
	cfg, warnings, err := config.LoadDir(o.ConfigDir)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		klog.FromContext(ctx).Info("Configuration warning", "warning", w)
	}
	if !o.CheckCleanerPrograms {
		return cfg, nil
	}
	if errs := config.ValidatePrograms(cfg, lookPath, wipe.Paths()); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration in %s: %w (the image holds %s and busybox's applets in /bin; "+
			"if cleanup Jobs run another image than the master, set --check-cleaner-programs=false)",
			o.ConfigDir, errs.ToAggregate(), strings.Join(wipe.Paths(), ", "))
	}
	return cfg, nil
}

// stripManagedFields drops metadata.managedFields from the objects the
// master caches (every Node and PV of the cluster): the master never reads
// them, and they are a large share of each object's memory.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

func runController(ctx context.Context, o *options.MasterOptions, cfg *config.Configuration, kube kubernetes.Interface,
	dyn dynamic.Interface, recorder record.EventRecorder, ready *readiness) error {
	strip := informers.WithTransform(stripManagedFields)
	cluster := informers.NewSharedInformerFactoryWithOptions(kube, 0, strip)
	own := informers.NewSharedInformerFactoryWithOptions(kube, 0, strip, informers.WithNamespace(o.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = jobs.LabelManagedBy + "=" + jobs.ManagedByValue
		}))
	notif := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	// The master may list and watch only its own admission policy.
	policy := informers.NewSharedInformerFactoryWithOptions(kube, 0, strip,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", o.AdmissionPolicy).String()
		}))
	inf := controller.Informers{
		Nodes: cluster.Core().V1().Nodes(), PVs: cluster.Core().V1().PersistentVolumes(),
		StorageClasses: cluster.Storage().V1().StorageClasses(), Jobs: own.Batch().V1().Jobs(),
		Pods: own.Core().V1().Pods(), Notifications: notif.ForResource(v1alpha1.SchemeGroupVersionResource).Informer(),
	}
	// Under Warn the policy is never read: no informer, so no right on it
	// is needed.
	if o.ReplacedMachinePolicy == controller.ReplacedMachineBlockPods {
		inf.AdmissionPolicies = policy.Admissionregistration().V1().ValidatingAdmissionPolicies()
	}
	// One memory of unwiped disks for the master and the release of claims
	// on deleted nodes, read from its cache: a report looks up its disks,
	// not the whole memory.
	inf.UnwipedDisks = notif.ForResource(v1alpha1.UnwipedDiskGroupVersionResource).Informer()
	if err := inf.UnwipedDisks.SetTransform(stripManagedFields); err != nil {
		return err
	}
	memory, err := unwiped.NewFromInformer(ctx, unwiped.Options{Disks: dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource),
		Kube: kube, Namespace: o.Namespace, Provisioner: o.ProvisionerName, Recorder: recorder}, inf.UnwipedDisks)
	if err != nil {
		return err
	}
	c, err := controller.New(ctx, kube, inf, recorder, controller.Options{
		Config: cfg, ProvisionerName: o.ProvisionerName, DiscoveryQPS: o.DiscoveryQPS, DiscoveryBurst: o.DiscoveryBurst,
		RetryBase: o.RetryBase, RetryMax: o.RetryMax, ReplacedMachinePolicy: o.ReplacedMachinePolicy, AdmissionPolicyName: o.AdmissionPolicy, Notifications: dyn.Resource(v1alpha1.SchemeGroupVersionResource),
		CacheSyncTimeout: o.CacheSyncTimeout, Unwiped: memory, UnwipedRetention: o.UnwipedRetention,
		Jobs: jobs.Params{Namespace: o.Namespace, Image: o.Image, ImagePullPolicy: v1.PullPolicy(o.ImagePullPolicy),
			DiscoveryShards: o.DiscoveryShards, DiscoveryTTL: int32(o.DiscoveryTTL.Seconds()),
			DiscoveryDeadline: int64(o.DiscoveryDeadline.Seconds()), CleanupDeadline: int64(o.CleanupDeadline.Seconds()),
			PriorityClassName: o.PriorityClassName, FSUUIDUnavailable: os.Getenv(identity.UnavailableEnv)},
	})
	if err != nil {
		return err
	}
	ready.set(c.Ready)
	defer ready.set(nil)
	// The release of claims on deleted nodes shares the master's Node and
	// PV caches, and its leadership.
	nc, err := nodecleanup.New(ctx, kube, inf.Nodes, inf.PVs, recorder, nodecleanup.Options{Config: cfg,
		ProvisionerName: o.ProvisionerName, Unwiped: memory})
	if err != nil {
		return err
	}
	cluster.StartWithContext(ctx)
	own.StartWithContext(ctx)
	policy.StartWithContext(ctx)
	notif.Start(ctx.Done()) // the dynamic informer factory has no StartWithContext
	defer cluster.Shutdown()
	defer own.Shutdown()
	defer policy.Shutdown()
	defer notif.Shutdown()
	var wg sync.WaitGroup
	wg.Go(func() { nc.Run(ctx) })
	c.Run(ctx, o.Workers)
	wg.Wait()
	return nil
}

var errLeadershipLost = errors.New("leader election lost")

func runLeaderElected(ctx context.Context, o *options.MasterOptions, kube kubernetes.Interface, recorder record.EventRecorder,
	run func(context.Context) error) error {
	host, _ := os.Hostname()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, o.LeaseName, kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: host + "_" + uuid.NewString(), EventRecorder: recorder})
	if err != nil {
		return fmt.Errorf("failed to create leader lock: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runErr error
	lost := false
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, Name: o.LeaseName, ReleaseOnCancel: true,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				runErr = run(ctx)
				cancel()
			},
			OnStoppedLeading: func() {
				lost = ctx.Err() == nil
				cancel()
			},
		},
	})
	if runErr != nil {
		return runErr
	}
	if lost {
		// The caller exits; a new process must not keep stale caches.
		return errLeadershipLost
	}
	return nil
}

// serveMetrics serves /metrics and /healthz, and /readyz when ready is
// set, until ctx ends.
func serveMetrics(ctx context.Context, addr string, ready http.Handler) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	if ready != nil {
		mux.Handle("/readyz", ready)
	}
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Metrics server failed", "address", addr)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
}
