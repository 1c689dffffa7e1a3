package unwiped

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/metrics"
)

// indexLegacy maps an entry recorded in a legacy identity form to the
// disks that refine it (legacyIndexValue).
const indexLegacy = "legacy"

// ErrNotSynced means the cache of the memory has not read it yet: a
// master then publishes and drops nothing, as for any memory that cannot
// be read.
var ErrNotSynced = errors.New("the memory of unwiped disks is not read yet (its UnwipedDisk cache has not synced)")

// mutationTTL is how long the store's own writes stand in front of its
// cache: well past any lag of the watch.
const mutationTTL = 5 * time.Minute

// cached reads the memory from an informer's cache: a disk's entries are
// found by name and through the legacy index, and the state the gate
// checks (synced, entries that do not parse, how many there are) is kept
// up to date by the informer's events, so no read lists the memory.
type cached struct {
	inf cache.SharedIndexInformer
	// handled is the event handler's registration: synced once the
	// handler saw every entry of the first list.
	handled cache.ResourceEventHandlerRegistration
	// mc puts the store's own creates in front of the cache until the
	// watch shows them: a disk remembered is found at once.
	mc cache.MutationCache

	mu sync.Mutex
	// invalid are the entries that do not parse, with why.
	invalid map[string]error
	count   int
}

// NewFromInformer returns the Store of a master that reads the memory from
// inf, an informer on UnwipedDisks that has not been started: its indexer
// and event handlers are registered here. Its writes go through o.Disks.
// Reads fail until inf has synced.
func NewFromInformer(ctx context.Context, o Options, inf cache.SharedIndexInformer) (Store, error) {
	s := New(o).(*store)
	if err := inf.AddIndexers(cache.Indexers{indexLegacy: indexLegacyFunc}); err != nil {
		return nil, fmt.Errorf("failed to index the memory of unwiped disks: %w", err)
	}
	c := &cached{inf: inf, invalid: map[string]error{}}
	c.mc = cache.NewIntegerResourceVersionMutationCacheWithOptions(klog.FromContext(ctx), inf.GetIndexer(),
		cache.MutationCacheOptions{Indexer: inf.GetIndexer(), TTL: mutationTTL, IncludeAdds: true, MaxCacheSize: 1000})
	logger := klog.FromContext(ctx)
	var err error
	c.handled, err = inf.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.observe(ctx, obj, true) },
		UpdateFunc: func(_, obj any) { s.observe(ctx, obj, false) },
		DeleteFunc: func(obj any) { c.remove(obj) },
	}, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		return nil, fmt.Errorf("failed to watch the memory of unwiped disks: %w", err)
	}
	s.cache = c
	return s, nil
}

// indexLegacyFunc indexes an entry by legacyIndexValue.
func indexLegacyFunc(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	id, _, _ := unstructured.NestedString(u.Object, "spec", "diskID")
	node, _, _ := unstructured.NestedString(u.Object, "spec", "node")
	path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
	if v := legacyIndexValue(identity.ID(id), node, path); v != "" {
		return []string{v}, nil
	}
	return nil, nil
}

// legacyIndexValue is what an entry recorded as id on node at path is
// found by, when id is a legacy form (identity.LegacyBase): a strong one
// on any node, a weak one on its node and path only.
func legacyIndexValue(id identity.ID, node, path string) string {
	b := identity.LegacyBase(id)
	switch {
	case b == "":
		return ""
	case id.Strong():
		return "s\x00" + b
	}
	return "w\x00" + node + "\x00" + path + "\x00" + b
}

// legacyQueries are the legacyIndexValues of the entries a disk of id on
// node at path may refine.
func legacyQueries(node, path string, id identity.ID) []string {
	var out []string
	for _, b := range identity.RefinedBases(id) {
		out = append(out, "s\x00"+b, "w\x00"+node+"\x00"+path+"\x00"+b)
	}
	return out
}

// observe records whether an entry parses, counts a new one and notes
// someone's deletion of it.
func (s *store) observe(ctx context.Context, obj any, added bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	c := s.cache
	c.mc.OnAddOrUpdate(u)
	_, err := parse(u)
	c.mu.Lock()
	if err != nil {
		c.invalid[u.GetName()] = err
	} else {
		delete(c.invalid, u.GetName())
	}
	if added {
		c.count++
	}
	c.mu.Unlock()
	if u.GetDeletionTimestamp() != nil {
		s.noteDeletion(ctx, u)
	}
}

func (c *cached) remove(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	c.mc.OnDelete(u)
	c.mu.Lock()
	delete(c.invalid, u.GetName())
	c.count--
	c.mu.Unlock()
}

// ready says whether the cache can be read: synced, and every entry parses.
func (c *cached) ready() error {
	if !c.inf.HasSynced() || !c.handled.HasSynced() {
		return ErrNotSynced
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.invalid) == 0 {
		return nil
	}
	names := make([]string, 0, len(c.invalid))
	for n := range c.invalid {
		names = append(names, n)
	}
	slices.Sort(names)
	return c.invalid[names[0]]
}

// size is how many entries the cache holds.
func (c *cached) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// check is the gate's check: the apiserver still serves UnwipedDisks (one
// entry is asked for), the cache has synced and every entry parses.
func (s *store) checkCached(ctx context.Context) error {
	_, err := s.Disks.List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsNotFound(err) {
		return errNotServed
	}
	if err != nil {
		return fmt.Errorf("failed to read the memory of unwiped disks (%s): %w", v1alpha1.UnwipedDiskResource, err)
	}
	if err := s.cache.ready(); err != nil {
		return err
	}
	metrics.UnwipedMemory.Set(float64(s.cache.size()))
	return nil
}

// candidatesCached returns the entries of the key and of the legacy forms
// that a disk of id on node at path refines, from the cache.
func (s *store) candidatesCached(node, path string, id identity.ID) (map[string]Disk, error) {
	if err := s.cache.ready(); err != nil {
		return nil, err
	}
	out := map[string]Disk{}
	addObj := func(obj any) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		d, err := parse(u)
		if err != nil {
			return err
		}
		out[u.GetName()] = d
		return nil
	}
	obj, exists, err := s.cache.mc.GetByKey(Key(node, path, id))
	if err != nil {
		return nil, err
	}
	if exists {
		if err := addObj(obj); err != nil {
			return nil, err
		}
	}
	for _, q := range legacyQueries(node, path, id) {
		objs, err := s.cache.mc.ByIndex(indexLegacy, q)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if err := addObj(o); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// loadCached returns every entry in the cache.
func (s *store) loadCached() (map[string]Disk, error) {
	if err := s.cache.ready(); err != nil {
		return nil, err
	}
	objs := s.cache.inf.GetStore().List()
	out := make(map[string]Disk, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		d, err := parse(u)
		if err != nil {
			return nil, err
		}
		out[u.GetName()] = d
	}
	return out, nil
}
