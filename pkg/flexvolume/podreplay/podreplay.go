package podreplay

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Replayer records the pod event handlers of one controller and replays
// pods to them.
type Replayer struct {
	informer coreinformers.PodInformer
	mu       sync.Mutex
	handlers []cache.ResourceEventHandler
}

// New wraps informer. Pass Informer() of the result to the controller.
func New(informer coreinformers.PodInformer) *Replayer {
	return &Replayer{informer: informer}
}

// PodInformer returns the informer to give the controller.
func (r *Replayer) PodInformer() coreinformers.PodInformer { return podInformer{r} }

// Replay calls OnUpdate(pod, pod) of the recorded handlers for every pod in
// the informer's cache that match selects, and returns how many pods it
// replayed. It must not be called from an informer handler.
func (r *Replayer) Replay(ctx context.Context, match func(*v1.Pod) bool) int {
	r.mu.Lock()
	handlers := append([]cache.ResourceEventHandler(nil), r.handlers...)
	r.mu.Unlock()
	if len(handlers) == 0 {
		return 0
	}
	n := 0
	for _, obj := range r.informer.Informer().GetStore().List() {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || !match(pod) {
			continue
		}
		for _, h := range handlers {
			h.OnUpdate(pod, pod)
		}
		n++
	}
	if n > 0 {
		klog.FromContext(ctx).V(2).Info("Replayed pods to the controller", "pods", n)
	}
	return n
}

func (r *Replayer) record(h cache.ResourceEventHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers = append(r.handlers, h)
}

type podInformer struct{ r *Replayer }

func (p podInformer) Informer() cache.SharedIndexInformer {
	return &recordingInformer{SharedIndexInformer: p.r.informer.Informer(), r: p.r}
}

func (p podInformer) Lister() corelisters.PodLister { return p.r.informer.Lister() }

// recordingInformer records the handlers added through it.
type recordingInformer struct {
	cache.SharedIndexInformer
	r *Replayer
}

func (i *recordingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.r.record(h)
	return i.SharedIndexInformer.AddEventHandler(h)
}

func (i *recordingInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	i.r.record(h)
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resync)
}

func (i *recordingInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	i.r.record(h)
	return i.SharedIndexInformer.AddEventHandlerWithOptions(h, o)
}
