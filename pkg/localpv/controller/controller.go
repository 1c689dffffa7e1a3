package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	admissionregistrationinformers "k8s.io/client-go/informers/admissionregistration/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/cleanupjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/discoveryjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/inventory"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/publishing"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

// Controller is the provisioner master.
type Controller interface {
	// Run starts the workers and blocks until ctx is done. The informers
	// must have been started by the caller.
	Run(ctx context.Context, workers int)
	// Ready returns nil once Run's informer caches have synced, and
	// otherwise an error naming those that have not (after
	// Options.CacheSyncTimeout, with the rights the master needs on them).
	// It is safe to call at any time.
	Ready() error
}

// Options configure the master.
type Options struct {
	// Config is the parsed ConfigMap.
	Config *config.Configuration
	// Jobs are the settings of the Jobs the master creates.
	Jobs jobs.Params
	// ProvisionerName goes into the pv.kubernetes.io/provisioned-by annotation.
	ProvisionerName string
	// DiscoveryQPS and DiscoveryBurst limit how fast discovery Jobs are created.
	DiscoveryQPS   float64
	DiscoveryBurst int
	// RetryBase and RetryMax bound the backoff of failed Jobs.
	RetryBase, RetryMax time.Duration
	// Clock is the time source; nil means the real clock.
	Clock clock.WithTicker
	// Notifications is the client of NodeDiskState objects. When set, the
	// object of a deleted node is deleted too.
	Notifications dynamic.ResourceInterface
	// ReplacedMachinePolicy is ReplacedMachineBlockPods (the default when
	// empty) or ReplacedMachineWarn.
	ReplacedMachinePolicy string
	// AdmissionPolicyName is the ValidatingAdmissionPolicy into which the
	// master writes the blocked claims; empty means
	// ReplacedMachineAdmissionPolicy.
	AdmissionPolicyName string
	// CacheSyncTimeout is how long Run waits for an informer cache before
	// it logs the cache and reports it in Ready; it keeps waiting. Zero
	// means DefaultCacheSyncTimeout.
	CacheSyncTimeout time.Duration
	// Unwiped is the memory of unwiped disks (package unwiped), shared by
	// every installation. Required.
	Unwiped unwiped.Store
	// UnwipedRetention is how long a disk remembered as unwiped is kept
	// once its node left the cluster (no Node, no NodeDiskState); zero
	// keeps it until it is wiped.
	UnwipedRetention time.Duration
}

// Informers are what the master watches. Jobs and Pods must be limited to
// the master's namespace and to objects labelled
// app.kubernetes.io/managed-by=local-volume-provisioner.
type Informers struct {
	Nodes          coreinformers.NodeInformer
	PVs            coreinformers.PersistentVolumeInformer
	StorageClasses storageinformers.StorageClassInformer
	Jobs           batchinformers.JobInformer
	Pods           coreinformers.PodInformer
	// Notifications watches localpv.nodeplug.io NodeDiskState objects
	// through a dynamic informer.
	Notifications cache.SharedIndexInformer
	// AdmissionPolicies watches the replaced-machine admission policy (it
	// may be limited to that one name), so that the blocked claims are
	// written again when someone re-applies or re-creates it. Required
	// under ReplacedMachineBlockPods; under ReplacedMachineWarn it is not
	// used (leave it nil and do not start it: the master then needs no
	// right on admission policies).
	AdmissionPolicies admissionregistrationinformers.ValidatingAdmissionPolicyInformer
	// UnwipedDisks, when set, is the informer Options.Unwiped reads the
	// memory from (unwiped.NewFromInformer): Run waits for it too.
	UnwipedDisks cache.SharedIndexInformer
}

type controller struct {
	kube     kubernetes.Interface
	recorder record.EventRecorder
	opts     Options
	cfg      *config.Configuration
	clock    clock.WithTicker

	nodeLister corelisters.NodeLister
	pvLister   corelisters.PersistentVolumeLister
	pvIndexer  cache.Indexer
	scLister   storagelisters.StorageClassLister
	jobLister  batchlisters.JobLister
	jobIndexer cache.Indexer
	podLister  corelisters.PodLister
	jobPods    jobs.JobPods
	unwiped    unwiped.Store
	memory     memoryGate
	// notifications is the NodeDiskState cache, by node name.
	notifications cache.Store
	caches        *cacheSync
	policy        blockedclaims.Writer
	inventory     inventory.Recorder
	ops           pvops.Interface
	marks         pvstate.Writer
	machines      machine.Checker
	discovery     discoveryjobs.Runner
	cleanup       cleanupjobs.Runner
	publisher     publishing.Publisher

	// missing counts the managed PVs whose disk is missing.
	missing missingGauge

	queue workqueue.TypedRateLimitingInterface[string]
}

var _ Controller = &controller{}

// New returns the master. It registers its event handlers and indexers on
// the informers; the handlers log with the logger of ctx.
func New(ctx context.Context, kube kubernetes.Interface, inf Informers, recorder record.EventRecorder, opts Options) (Controller, error) {
	return newController(ctx, kube, inf, recorder, opts)
}

func newController(ctx context.Context, kube kubernetes.Interface, inf Informers, recorder record.EventRecorder, opts Options) (*controller, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("no configuration")
	}
	if opts.Unwiped == nil {
		return nil, fmt.Errorf("no memory of unwiped disks")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.DiscoveryQPS <= 0 {
		opts.DiscoveryQPS = float64(rate.Inf)
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = 10 * time.Second
	}
	switch opts.ReplacedMachinePolicy {
	case "":
		opts.ReplacedMachinePolicy = ReplacedMachineBlockPods
	case ReplacedMachineBlockPods, ReplacedMachineWarn:
	default:
		return nil, fmt.Errorf("replaced machine policy %q is not one of %v", opts.ReplacedMachinePolicy, ReplacedMachinePolicies)
	}
	if opts.AdmissionPolicyName == "" {
		opts.AdmissionPolicyName = ReplacedMachineAdmissionPolicy
	}
	if opts.ReplacedMachinePolicy == ReplacedMachineBlockPods && inf.AdmissionPolicies == nil {
		return nil, fmt.Errorf("replaced machine policy %s needs an informer on admission policies", ReplacedMachineBlockPods)
	}
	if opts.ReplacedMachinePolicy != ReplacedMachineBlockPods {
		inf.AdmissionPolicies = nil
	}
	if opts.CacheSyncTimeout <= 0 {
		opts.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if opts.RetryMax < opts.RetryBase {
		opts.RetryMax = max(opts.RetryBase, 30*time.Minute)
	}
	c := &controller{
		kube: kube, recorder: recorder, opts: opts, cfg: opts.Config, clock: opts.Clock,
		nodeLister: inf.Nodes.Lister(), pvLister: inf.PVs.Lister(), pvIndexer: inf.PVs.Informer().GetIndexer(),
		scLister: inf.StorageClasses.Lister(), jobLister: inf.Jobs.Lister(), jobIndexer: inf.Jobs.Informer().GetIndexer(),
		podLister: inf.Pods.Lister(), unwiped: opts.Unwiped, notifications: inf.Notifications.GetStore(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, opts.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "local_volume_provisioner", Clock: opts.Clock}),
	}
	if err := inf.PVs.Informer().AddIndexers(pvIndexers); err != nil {
		return nil, fmt.Errorf("failed to add PV indexers: %w", err)
	}
	if err := inf.Jobs.Informer().AddIndexers(jobIndexers); err != nil {
		return nil, fmt.Errorf("failed to add Job indexers: %w", err)
	}
	if err := inf.Pods.Informer().AddIndexers(jobs.PodIndexers); err != nil {
		return nil, fmt.Errorf("failed to add pod indexers: %w", err)
	}
	c.jobPods = jobs.PodsByIndex(inf.Pods.Informer().GetIndexer())
	c.wireRoles(inf)
	if err := c.addHandlers(klog.FromContext(ctx), inf); err != nil {
		return nil, err
	}
	c.caches = newCacheSync(c.informerCaches(inf), opts.CacheSyncTimeout, opts.Clock)
	return c, nil
}

// informerCaches names the informers Run waits for by what they list and
// watch.
func (c *controller) informerCaches(inf Informers) []informerCache {
	ns := " in namespace " + c.opts.Jobs.Namespace
	caches := []informerCache{{"nodes", inf.Nodes.Informer()}, {"persistentvolumes", inf.PVs.Informer()},
		{"storageclasses.storage.k8s.io", inf.StorageClasses.Informer()}, {"jobs.batch" + ns, inf.Jobs.Informer()},
		{"pods" + ns, inf.Pods.Informer()}, {"nodediskstates.localpv.nodeplug.io", inf.Notifications}}
	if inf.UnwipedDisks != nil {
		caches = append(caches, informerCache{"unwipeddisks.localpv.nodeplug.io", inf.UnwipedDisks})
	}
	if inf.AdmissionPolicies != nil {
		caches = append(caches, informerCache{"validatingadmissionpolicies.admissionregistration.k8s.io named " +
			c.opts.AdmissionPolicyName, inf.AdmissionPolicies.Informer()})
	}
	return caches
}

func (c *controller) Ready() error {
	if err := c.caches.ready(); err != nil {
		return err
	}
	return c.memoryErr()
}

func (c *controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting local volume provisioner master")
	defer logger.Info("Shutting down local volume provisioner master")
	if !c.caches.wait(ctx) {
		return
	}
	c.enqueueKnownNodes()
	c.queue.Add(blockedClaimsKey)
	var wg sync.WaitGroup
	wg.Go(func() { wait.UntilWithContext(ctx, c.expireUnwiped, time.Hour) })
	for range max(workers, 1) {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

// enqueueKnownNodes queues the nodes that have PVs but may no longer exist,
// so that node deletions missed while no master ran are handled.
func (c *controller) enqueueKnownNodes() {
	for _, n := range c.pvIndexer.ListIndexFuncValues(indexNode) {
		c.queue.Add(nodeKey(n))
	}
}

func (c *controller) worker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

func (c *controller) processNextWorkItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Sync failed, will retry", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *controller) sync(ctx context.Context, key string) error {
	kind, name, ok := strings.Cut(key, "/")
	if !ok {
		return nil
	}
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "key", key))
	if err := c.checkMemory(ctx); err != nil {
		return err
	}
	switch kind {
	case "node":
		return c.syncNode(ctx, name)
	case "vol":
		return c.cleanup.Sync(ctx, name)
	case "claims":
		return c.policy.Sync(ctx)
	}
	return nil
}

// blockedClaimsKey asks the policy writer to write the blocked claims.
const blockedClaimsKey = "claims/blocked"

func nodeKey(name string) string { return "node/" + name }
func volKey(id string) string    { return "vol/" + id }
