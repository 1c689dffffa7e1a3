package mountpod

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// ReasonMisconfigured is the reason of the Warning Event on a labelled pod
// that cannot serve mounts (CheckPropagation).
const ReasonMisconfigured = "MountPodMisconfigured"

var (
	misconfiguredPods = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "nodeplug",
		Subsystem: "mountpod",
		Name:      "misconfigured_pods",
		Help: "Pods in the mount namespace on this node that carry a mount label but do not mount the kubelet root dir " +
			"at the same path with Bidirectional propagation, and so serve no volume.",
		StabilityLevel: metrics.ALPHA,
	})
	registerMisconfigOnce sync.Once
)

// MisconfigReporter watches the labelled pods of the mount namespace and
// tells the operator about those that CheckPropagation refuses: a Warning
// Event on the pod, once per pod and spec, and the
// nodeplug_mountpod_misconfigured_pods gauge. The Finder refuses such pods
// itself; this only makes the refusal visible before a volume needs them.
type MisconfigReporter struct {
	root     string
	recorder record.EventRecorder

	mu  sync.Mutex
	bad map[types.UID]string // pod UID -> the message last reported
}

var _ cache.ResourceEventHandler = &MisconfigReporter{}

// NewMisconfigReporter returns a reporter for a kubelet whose root dir is
// root. recorder may be nil (no Events, the gauge only).
func NewMisconfigReporter(root string, recorder record.EventRecorder) *MisconfigReporter {
	registerMisconfigOnce.Do(func() { legacyregistry.MustRegister(misconfiguredPods) })
	return &MisconfigReporter{root: root, recorder: recorder, bad: map[types.UID]string{}}
}

// OnAdd implements cache.ResourceEventHandler.
func (r *MisconfigReporter) OnAdd(obj any, _ bool) { r.check(obj) }

// OnUpdate implements cache.ResourceEventHandler.
func (r *MisconfigReporter) OnUpdate(_, obj any) { r.check(obj) }

// OnDelete implements cache.ResourceEventHandler.
func (r *MisconfigReporter) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok {
		r.forget(pod.UID)
	}
}

// Misconfigured returns how many pods are reported now.
func (r *MisconfigReporter) Misconfigured() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bad)
}

func (r *MisconfigReporter) check(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	keys, _ := indexMountLabels(pod)
	var err error
	if len(keys) > 0 && pod.DeletionTimestamp == nil {
		err = CheckPropagation(pod, r.root)
	}
	if err == nil {
		r.forget(pod.UID)
		return
	}
	r.mu.Lock()
	last, seen := r.bad[pod.UID]
	r.bad[pod.UID] = err.Error()
	misconfiguredPods.Set(float64(len(r.bad)))
	r.mu.Unlock()
	if (!seen || last != err.Error()) && r.recorder != nil {
		r.recorder.Event(pod, v1.EventTypeWarning, ReasonMisconfigured, err.Error())
	}
}

func (r *MisconfigReporter) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.bad, uid)
	misconfiguredPods.Set(float64(len(r.bad)))
}
