package nodecleanup

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

// Controller releases the bound claims of deleted nodes.
type Controller interface {
	// Run waits for the informers' caches, then works until ctx is done.
	// The informers must have been started by the caller. It returns at
	// once when no class sets releaseClaimsOfDeletedNodesAfter.
	Run(ctx context.Context)
}

// Options configure the controller.
type Options struct {
	// Config is the parsed ConfigMap; each class's
	// releaseClaimsOfDeletedNodesAfter says whether and when.
	Config *config.Configuration
	// Clock is the time source; nil means the real clock.
	Clock clock.WithTicker
	// ProvisionerName, when set, limits the PVs acted on to those whose
	// pv.kubernetes.io/provisioned-by it is: another installation's PVs
	// are never touched.
	ProvisionerName string
	// Unwiped, when set, remembers the disk of each PV dropped without a
	// wipe, so that it is wiped before it is published again if its machine
	// comes back.
	Unwiped unwiped.Store
}

// indexNode maps a node name to the master's PVs on it. The name differs
// from the master's own index of the same shared informer.
const indexNode = "nodecleanup/node"

type controller struct {
	kube     kubernetes.Interface
	recorder record.EventRecorder
	cfg      *config.Configuration
	clock    clock.WithTicker
	unwiped  unwiped.Store
	// marks writes the node-gone mark.
	marks pvstate.Writer
	// provisioner is Options.ProvisionerName.
	provisioner string

	nodeLister corelisters.NodeLister
	pvIndexer  cache.Indexer
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// gone holds, per node name, when the Node was seen deleted, or first
	// found missing when the deletion happened while no master ran. It is
	// kept while the node has PVs, so that a claim bound later is known to
	// be fresh.
	gone map[string]time.Time
	// kept holds the claims already told why they are not released.
	kept map[types.UID]bool
}

var _ Controller = &controller{}

// New returns the controller and registers its event handlers and its PV
// index on the informers, which must not have been started yet.
func New(ctx context.Context, kube kubernetes.Interface, nodes coreinformers.NodeInformer, pvs coreinformers.PersistentVolumeInformer,
	recorder record.EventRecorder, opts Options) (Controller, error) {
	return newController(ctx, kube, nodes, pvs, recorder, opts)
}

func newController(ctx context.Context, kube kubernetes.Interface, nodes coreinformers.NodeInformer, pvs coreinformers.PersistentVolumeInformer,
	recorder record.EventRecorder, opts Options) (*controller, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("no configuration")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &controller{
		kube: kube, recorder: recorder, cfg: opts.Config, clock: opts.Clock, unwiped: opts.Unwiped, provisioner: opts.ProvisionerName,
		marks:      pvstate.New(kube.CoreV1(), opts.Clock),
		nodeLister: nodes.Lister(), pvIndexer: pvs.Informer().GetIndexer(),
		synced: []cache.InformerSynced{nodes.Informer().HasSynced, pvs.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "local_volume_provisioner_node_cleanup", Clock: opts.Clock}),
		gone: map[string]time.Time{},
		kept: map[types.UID]bool{},
	}
	if !c.cfg.ReleasesClaimsOfDeletedNodes() {
		return c, nil // nothing to watch
	}
	if err := pvs.Informer().AddIndexers(cache.Indexers{indexNode: pvNode}); err != nil {
		return nil, fmt.Errorf("failed to add the PV index of node cleanup: %w", err)
	}
	logger := klog.FromContext(ctx)
	if _, err := nodes.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onNodeAdd,
		DeleteFunc: c.onNodeDelete,
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("failed to watch nodes: %w", err)
	}
	if _, err := pvs.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPV,
		UpdateFunc: func(_, obj interface{}) { c.onPV(obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, fmt.Errorf("failed to watch PVs: %w", err)
	}
	return c, nil
}

// owns reports whether a PV is of this master's provisioner name.
func (c *controller) owns(pv *v1.PersistentVolume) bool {
	return c.provisioner == "" || pv.Annotations[jobs.AnnProvisionedBy] == c.provisioner
}

func pvNode(obj interface{}) ([]string, error) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok || pv.Labels[jobs.LabelManagedBy] != jobs.ManagedByValue || pv.Annotations[jobs.AnnNode] == "" {
		return nil, nil
	}
	return []string{pv.Annotations[jobs.AnnNode]}, nil
}

func (c *controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if !c.cfg.ReleasesClaimsOfDeletedNodes() {
		logger.V(2).Info("No class releases the claims of deleted nodes")
		return
	}
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger.Info("Starting the release of claims on deleted nodes")
	defer logger.Info("Shutting down the release of claims on deleted nodes")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNextWorkItem(ctx) {
			}
		}, time.Second)
	})
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *controller) processNextWorkItem(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil {
		klog.FromContext(ctx).Error(err, "Node cleanup failed, will retry", "node", name)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// onNodeAdd forgets the deletion of a node that is back: its delay starts
// again from its next deletion.
func (c *controller) onNodeAdd(obj interface{}) {
	if node, ok := obj.(*v1.Node); ok {
		c.forget(node.Name)
	}
}

func (c *controller) onNodeDelete(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	c.gone[node.Name] = c.clock.Now()
	c.mu.Unlock()
	c.queue.Add(node.Name)
}

// onPV queues the node of a PV of a class that releases claims, so that
// nodes deleted while no master ran are found, and claims bound later are
// looked at.
func (c *controller) onPV(obj interface{}) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	if _, on := c.delay(pv); on {
		if names, _ := pvNode(pv); len(names) == 1 {
			c.queue.Add(names[0])
		}
	}
}

// delay returns the releaseClaimsOfDeletedNodesAfter of a PV's class.
func (c *controller) delay(pv *v1.PersistentVolume) (time.Duration, bool) {
	mc, ok := c.cfg.StorageClassMap[pv.Annotations[jobs.AnnClass]]
	if !ok {
		return 0, false
	}
	return mc.ReleasesClaimsOfDeletedNodes()
}

func (c *controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.gone, name)
}

// goneSince returns when a node was seen deleted; a node found missing
// without a deletion seen counts from now.
func (c *controller) goneSince(name string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.gone[name]
	if !ok {
		t = c.clock.Now()
		c.gone[name] = t
	}
	return t
}

// firstKept reports whether a kept claim is reported for the first time.
func (c *controller) firstKept(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept[uid] {
		return false
	}
	c.kept[uid] = true
	return true
}

// sync looks at one node name: if its Node is missing, the claims of its
// PVs whose class delay has passed are released, and the node is looked at
// again when the next delay ends.
func (c *controller) sync(ctx context.Context, name string) error {
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "node", name))
	_, err := c.nodeLister.Get(name)
	switch {
	case err == nil:
		c.forget(name)
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}
	all, err := c.pvIndexer.ByIndex(indexNode, name)
	if err != nil {
		return fmt.Errorf("failed to look up the PVs of node %s: %w", name, err)
	}
	if len(all) == 0 {
		c.forget(name) // a PV can only appear again with its Node
		return nil
	}
	since := c.goneSince(name)
	now := c.clock.Now()
	var due []*v1.PersistentVolume
	var next time.Duration
	for _, o := range all {
		pv := o.(*v1.PersistentVolume)
		d, on := c.delay(pv)
		switch {
		case !on || pv.DeletionTimestamp != nil || !c.owns(pv):
		case marked(pv) && (pv.Status.Phase == v1.VolumeBound || deletes(pv)):
			due = append(due, pv) // resume a release that was cut short
		case marked(pv): // a released Retain PV: kept
		case pv.Status.Phase != v1.VolumeBound || pv.Spec.ClaimRef == nil:
		case !now.Before(since.Add(d)):
			due = append(due, pv)
		case next == 0 || since.Add(d).Sub(now) < next:
			next = since.Add(d).Sub(now)
		}
	}
	if next > 0 {
		c.queue.AddAfter(name, next)
	}
	if len(due) == 0 {
		return nil
	}
	return c.release(ctx, name, since, due)
}

// deletes reports whether a PV's reclaim policy is Delete: the PV is
// deleted once its claim is released. A Retain PV is kept, Released, as its
// policy asks.
func deletes(pv *v1.PersistentVolume) bool {
	return pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete
}

func marked(pv *v1.PersistentVolume) bool {
	_, ok := pv.Annotations[jobs.AnnNodeGone]
	return ok
}
