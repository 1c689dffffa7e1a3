package cleanupjobs_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/cleanupjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops/pvopstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

const (
	ns    = "lpv"
	volID = "0123456789abcdef0123"
)

var (
	start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	disk  = identity.LocalFileHandle(0, 1, 1, []byte("vol1"))
)

// harness is a Runner over a fake clientset, whose PVs and Jobs the
// Volumes lookup reads from the apiserver, as the caches would show them.
type harness struct {
	t          *testing.T
	ctx        context.Context
	kube       *fake.Clientset
	dyn        *dynamicfake.FakeDynamicClient
	nodes      cache.Indexer
	pods       cache.Indexer
	clock      *testingclock.FakeClock
	recorder   *record.FakeRecorder
	ops        *pvopstest.Fake
	discovered []string
	requeued   map[string]time.Duration
	r          cleanupjobs.Runner
	uids       int
}

// releasedPV is a released Delete PV of node a (machine m1), claimed once,
// with its disk's identity.
func releasedPV() *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-pv-" + volID, UID: "pv-uid",
		Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue, jobs.LabelVolumeID: volID},
		Annotations: map[string]string{jobs.AnnNode: "a", jobs.AnnHostPath: "/mnt/fast/vol1", jobs.AnnClass: "fast",
			jobs.AnnKind: string(report.KindDirectory), jobs.AnnDiskID: string(disk)},
		Finalizers: []string{jobs.FinalizerPVProtection}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/fast/vol1"}},
			ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeReleased}}
	machine.Set(pv, machine.Identity{ID: "m1", UUID: "u1"})
	return pv
}

func machineNode(id string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{MachineID: id, SystemUUID: "u1"}}}
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: "fast:\n  hostDir: /mnt/fast\n  mountDir: /mnt/fast\n"})
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	h := &harness{t: t, ctx: ctx, kube: fake.NewClientset(objs...), dyn: unwipedtest.Client(), clock: testingclock.NewFakeClock(start),
		nodes:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		pods:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		recorder: record.NewFakeRecorder(100), ops: &pvopstest.Fake{}, requeued: map[string]time.Duration{}}
	for _, o := range objs {
		if n, ok := o.(*v1.Node); ok {
			_ = h.nodes.Add(n)
		}
	}
	h.kube.PrependReactor("create", "jobs", func(a core.Action) (bool, runtime.Object, error) {
		j := a.(core.CreateAction).GetObject().(*batchv1.Job)
		h.uids++
		j.UID, j.CreationTimestamp = types.UID(fmt.Sprint("job-", h.uids)), metav1.NewTime(h.clock.Now())
		return false, nil, nil
	})
	h.r = cleanupjobs.New(cleanupjobs.Config{Provisioner: cfg, Kube: h.kube, Volumes: h, Ops: h.ops, Marks: pvstate.New(h.kube.CoreV1(), nil),
		Params: jobs.Params{Namespace: ns, Image: "lpv:dev"},
		Nodes:  corelisters.NewNodeLister(h.nodes), Pods: jobs.PodsByLabel(corelisters.NewPodLister(h.pods)),
		Unwiped: h.memory(), Recorder: h.recorder, Clock: h.clock,
		RetryBase: 10 * time.Second, RetryMax: time.Minute,
		RequestDiscovery: func(node string) { h.discovered = append(h.discovered, node) },
		Requeue:          func(id string, after time.Duration) { h.requeued[id] = after }})
	return h
}

// memory is the memory of unwiped disks of the master in ns.
func (h *harness) memory() unwiped.Store { return unwipedtest.Store(h.dyn, h.kube, ns, h.clock) }

// PV is the Volumes lookup, from the fake apiserver.
func (h *harness) PV(id string) (*v1.PersistentVolume, error) {
	pvs, err := h.kube.CoreV1().PersistentVolumes().List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pvs.Items {
		if pvs.Items[i].Labels[jobs.LabelVolumeID] == id {
			return &pvs.Items[i], nil
		}
	}
	return nil, nil
}

// Jobs is the Volumes lookup of cleanup Jobs, oldest attempt first.
func (h *harness) Jobs(id string) ([]*batchv1.Job, error) {
	js, err := h.kube.BatchV1().Jobs(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	for i := range js.Items {
		if js.Items[i].Labels[jobs.LabelVolumeID] == id {
			out = append(out, &js.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *batchv1.Job) int { return jobs.Attempt(a) - jobs.Attempt(b) })
	return out, nil
}

func (h *harness) sync() {
	h.t.Helper()
	if err := h.r.Sync(h.ctx, volID); err != nil {
		h.t.Fatalf("Sync: %v", err)
	}
}

func (h *harness) jobNames() []string {
	js, _ := h.Jobs(volID)
	var out []string
	for _, j := range js {
		out = append(out, j.Name)
	}
	return out
}

// finish marks the latest Job finished and gives it a pod that exited with
// code and msg.
func (h *harness) finish(code int32, msg string) {
	h.t.Helper()
	js, _ := h.Jobs(volID)
	j := js[len(js)-1]
	cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(h.clock.Now())}
	if code != 0 {
		cond.Type, cond.Reason = batchv1.JobFailed, "BackoffLimitExceeded"
	}
	j.Status.Conditions = append(j.Status.Conditions, cond)
	if _, err := h.kube.BatchV1().Jobs(ns).UpdateStatus(h.ctx, j, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-pod", Namespace: ns, Labels: map[string]string{batchv1.JobNameLabel: j.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "cleanup",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Message: msg}}}}}}
	_ = h.pods.Add(pod)
}

func (h *harness) events() string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return strings.Join(out, "\n")
}
