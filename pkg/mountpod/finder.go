package mountpod

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Finder answers which container serves a plugin's utilities on this node.
type Finder interface {
	// Find returns the target for plugin, a *NoPodError when no pod serves
	// it, or ErrNotSynced before the pod cache has synced.
	Find(plugin string) (Target, error)
	// Served returns, for every plugin that a qualifying pod serves, the
	// chosen target.
	Served() map[string]Target
	// Runs reports whether the pod with uid is in the namespace (on the
	// node) and Running, Ready or not (see Runs).
	Runs(uid types.UID) bool
	// Namespace is the mount namespace.
	Namespace() string
}

// ErrNotSynced is returned while the pod cache is filling.
var ErrNotSynced = errors.New("the mount pod cache has not synced yet")

// NoPodError says that no pod serves a plugin. Its message names the label
// the missing pod should carry.
type NoPodError struct {
	Plugin, Label, Namespace, Node string
	// Disabled, when set, says why no pod is looked up at all (Disable).
	Disabled error
	// Misconfigured names the pods that carry the label but fail
	// CheckPropagation against Root.
	Misconfigured []string
	Root          string
}

func (e *NoPodError) Error() string {
	if e.Disabled != nil {
		return fmt.Sprintf("mount pods are not used (%v); mount utilities of plugin %s run on the host", e.Disabled, e.Plugin)
	}
	where := "on node " + e.Node
	if e.Node == "" {
		where = "on any node"
	}
	msg := fmt.Sprintf("no Running and Ready pod in namespace %s %s has label %s=%s (mount utilities of plugin %s)",
		e.Namespace, where, e.Label, LabelValue, e.Plugin)
	if len(e.Misconfigured) > 0 {
		msg += fmt.Sprintf("; %s carry the label but do not mount the kubelet root dir %s at the same path with "+
			"mountPropagation: Bidirectional, so mounts made in them would not reach the host (see their %s events)",
			strings.Join(e.Misconfigured, ", "), e.Root, ReasonMisconfigured)
	}
	return msg
}

const (
	labelIndex = "mountLabel"
	uidIndex   = "uid"
)

// indexMountLabels indexes a pod under each mount label key set to "true".
func indexMountLabels(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	for k, v := range pod.Labels {
		if v != LabelValue {
			continue
		}
		if _, _, err := ParseLabelKey(k); err == nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// InformerFinder is a Finder over an informer scoped to one namespace and
// one node.
type InformerFinder struct {
	namespace, node string
	// root, when set, is the kubelet root dir a pod must mount with
	// Bidirectional propagation to qualify (CheckPropagation).
	root     string
	indexer  cache.Indexer
	disabled atomic.Pointer[error]
	synced   atomic.Pointer[cache.InformerSynced]
	// keys caches LabelKey by plugin name (validating a key is a regexp
	// match, the most expensive part of a lookup).
	keys sync.Map
}

type cachedKey struct {
	key string
	err error
}

func (f *InformerFinder) labelKey(plugin string) (string, error) {
	if k, ok := f.keys.Load(plugin); ok {
		c := k.(cachedKey)
		return c.key, c.err
	}
	key, err := LabelKey(plugin)
	f.keys.Store(plugin, cachedKey{key, err})
	return key, err
}

var _ Finder = &InformerFinder{}

// NewFinder returns a Finder for namespace and node that answers
// ErrNotSynced until Start. With node "", pods on every node serve (the
// controller-manager); FindPreferring then prefers one node's.
func NewFinder(namespace, node string) *InformerFinder {
	return &InformerFinder{namespace: namespace, node: node}
}

// NewFinderFromIndexer returns a Finder over an existing indexer (tests,
// benchmarks); it must have been built with Indexers().
func NewFinderFromIndexer(namespace, node string, idx cache.Indexer) *InformerFinder {
	f := &InformerFinder{namespace: namespace, node: node, indexer: idx}
	always := cache.InformerSynced(func() bool { return true })
	f.synced.Store(&always)
	return f
}

// Disable makes every lookup answer that no pod serves (a *NoPodError
// carrying reason), so that utilities run on the host: for when the pod
// informer cannot start. Lookups never wait forever for a cache that will
// not sync.
func (f *InformerFinder) Disable(reason error) { f.disabled.Store(&reason) }

// RequirePropagation makes a pod qualify only when CheckPropagation(pod,
// root) passes. The kubelet sets it to its root dir before Start.
func (f *InformerFinder) RequirePropagation(root string) { f.root = root }

// Indexers returns the indexers a Finder's indexer needs.
func Indexers() cache.Indexers {
	return cache.Indexers{labelIndex: indexMountLabels, uidIndex: func(obj any) ([]string, error) {
		if pod, ok := obj.(*v1.Pod); ok {
			return []string{string(pod.UID)}, nil
		}
		return nil, nil
	}}
}

// Start starts the informer with client and returns at once. Handlers, if
// any, are told about every pod change in the namespace on this node.
func (f *InformerFinder) Start(ctx context.Context, client kubernetes.Interface, handlers ...cache.ResourceEventHandler) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		informers.WithNamespace(f.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			if f.node != "" {
				o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", f.node).String()
			}
		}),
		informers.WithTransform(cache.TransformFunc(dropManagedFields)))
	inf := factory.Core().V1().Pods().Informer()
	if err := inf.AddIndexers(Indexers()); err != nil {
		return fmt.Errorf("mount pod informer: %w", err)
	}
	logger := klog.FromContext(ctx)
	for _, h := range handlers {
		if _, err := inf.AddEventHandlerWithOptions(h, cache.HandlerOptions{Logger: &logger}); err != nil {
			return fmt.Errorf("mount pod informer: %w", err)
		}
	}
	f.indexer = inf.GetIndexer()
	synced := cache.InformerSynced(inf.HasSynced)
	factory.StartWithContext(ctx)
	f.synced.Store(&synced)
	logger.Info("Watching mount pods", "namespace", f.namespace, "node", f.node)
	return nil
}

// WaitForSync waits until the pod cache has synced or ctx ends, and
// reports whether it synced.
func (f *InformerFinder) WaitForSync(ctx context.Context) bool {
	for {
		if f.ready() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Namespace implements Finder.
func (f *InformerFinder) Namespace() string { return f.namespace }

func (f *InformerFinder) ready() bool {
	s := f.synced.Load()
	return s != nil && (*s)()
}

// Find implements Finder.
func (f *InformerFinder) Find(plugin string) (Target, error) { return f.FindPreferring(plugin, "") }

// FindPreferring is Find, choosing among the pods on node first when any
// of them qualifies (the node a volume is attached to). An empty node
// prefers none.
func (f *InformerFinder) FindPreferring(plugin, node string) (Target, error) {
	if reason := f.disabled.Load(); reason != nil {
		return Target{}, &NoPodError{Plugin: plugin, Namespace: f.namespace, Node: f.node, Disabled: *reason}
	}
	if !f.ready() {
		return Target{}, ErrNotSynced
	}
	key, err := f.labelKey(plugin)
	if err != nil {
		return Target{}, err
	}
	objs, err := f.indexer.ByIndex(labelIndex, key)
	if err != nil {
		return Target{}, fmt.Errorf("mount pod index: %w", err)
	}
	if node != "" && f.node == "" {
		onNode := func(pod *v1.Pod, namespace, _ string) bool { return Qualifies(pod, namespace, node) }
		if pod := f.choose(objs, onNode); pod != nil {
			return TargetFor(pod)
		}
	}
	if pod := f.choose(objs, Qualifies); pod != nil {
		return TargetFor(pod)
	}
	return Target{}, &NoPodError{Plugin: plugin, Label: key, Namespace: f.namespace, Node: f.node,
		Misconfigured: f.misconfigured(objs), Root: f.root}
}

// misconfigured names the pods of objs that would qualify but for
// CheckPropagation.
func (f *InformerFinder) misconfigured(objs []any) []string {
	if f.root == "" {
		return nil
	}
	var out []string
	for _, o := range objs {
		if pod, _ := o.(*v1.Pod); pod != nil && Qualifies(pod, f.namespace, f.node) && CheckPropagation(pod, f.root) != nil {
			out = append(out, pod.Namespace+"/"+pod.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (f *InformerFinder) choose(objs []any, accept func(pod *v1.Pod, namespace, node string) bool) *v1.Pod {
	var ok []*v1.Pod
	for _, o := range objs {
		if pod, _ := o.(*v1.Pod); pod != nil && accept(pod, f.namespace, f.node) &&
			(f.root == "" || CheckPropagation(pod, f.root) == nil) {
			ok = append(ok, pod)
		}
	}
	return Choose(ok)
}

// Served implements Finder.
func (f *InformerFinder) Served() map[string]Target {
	out := map[string]Target{}
	if !f.ready() || f.disabled.Load() != nil {
		return out
	}
	for _, key := range f.indexer.ListIndexFuncValues(labelIndex) {
		plugin, _, err := ParseLabelKey(key)
		if err != nil {
			continue
		}
		objs, err := f.indexer.ByIndex(labelIndex, key)
		if err != nil {
			continue
		}
		if pod := f.choose(objs, Qualifies); pod != nil {
			if t, err := TargetFor(pod); err == nil {
				out[plugin] = t
			}
		}
	}
	return out
}

// Runs implements Finder.
func (f *InformerFinder) Runs(uid types.UID) bool {
	if !f.ready() {
		return false
	}
	objs, err := f.indexer.ByIndex(uidIndex, string(uid))
	if err != nil {
		return false
	}
	for _, o := range objs {
		if pod, _ := o.(*v1.Pod); pod != nil && Runs(pod, f.namespace, f.node) {
			return true
		}
	}
	return false
}

func dropManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*v1.Pod); ok {
		pod.ManagedFields = nil
	}
	return obj, nil
}
