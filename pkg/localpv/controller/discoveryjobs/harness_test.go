package discoveryjobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/discoveryjobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

const ns = "lpv"

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// consumer records the reports handed to it.
type consumer struct {
	got []string
	err error
}

func (c *consumer) Consume(_ context.Context, node *v1.Node, res *validation.Result, _ *report.Report) error {
	c.got = append(c.got, fmt.Sprintf("%s: %d accepted", node.Name, len(res.Accepted)))
	return c.err
}

// harness is a Runner over a fake clientset whose Jobs and pods the
// listers show after each step, as informers would.
type harness struct {
	t        *testing.T
	ctx      context.Context
	kube     *fake.Clientset
	jobs     cache.Indexer
	pods     cache.Indexer
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	consumer *consumer
	requeued map[string]time.Duration
	r        discoveryjobs.Runner
	uids     int
}

func newHarness(t *testing.T, tweak func(*discoveryjobs.Config)) *harness {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: "fast:\n  hostDir: /mnt/fast\n  mountDir: /mnt/fast\n"})
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	h := &harness{t: t, ctx: ctx, kube: fake.NewClientset(), clock: testingclock.NewFakeClock(start),
		jobs:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		pods:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		recorder: record.NewFakeRecorder(100), consumer: &consumer{}, requeued: map[string]time.Duration{}}
	h.kube.PrependReactor("create", "jobs", func(a core.Action) (bool, runtime.Object, error) {
		j := a.(core.CreateAction).GetObject().(*batchv1.Job)
		h.uids++
		j.UID, j.CreationTimestamp = k8stypes.UID(fmt.Sprint("job-", h.uids)), metav1.NewTime(h.clock.Now())
		return false, nil, nil
	})
	c := discoveryjobs.Config{Provisioner: cfg, Params: jobs.Params{Namespace: ns, Image: "lpv:dev", DiscoveryShards: 2},
		Client: h.kube.BatchV1(), Jobs: batchlisters.NewJobLister(h.jobs), Pods: jobs.PodsByLabel(corelisters.NewPodLister(h.pods)),
		Recorder: h.recorder, Clock: h.clock, RetryBase: 10 * time.Second, RetryMax: time.Minute,
		HeldPaths: func(*v1.Node) []string { return []string{"/dev/sdz"} },
		Requeue:   func(node string, after time.Duration) { h.requeued[node] = after }, Consumer: h.consumer}
	if tweak != nil {
		tweak(&c)
	}
	h.r = discoveryjobs.New(c)
	return h
}

func node(name string) *v1.Node { return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

// refresh copies the fake apiserver's Jobs and pods into the listers.
func (h *harness) refresh() {
	h.t.Helper()
	js, _ := h.kube.BatchV1().Jobs(ns).List(h.ctx, metav1.ListOptions{})
	objs := []interface{}{}
	for i := range js.Items {
		objs = append(objs, &js.Items[i])
	}
	_ = h.jobs.Replace(objs, "1")
	ps, _ := h.kube.CoreV1().Pods(ns).List(h.ctx, metav1.ListOptions{})
	objs = []interface{}{}
	for i := range ps.Items {
		objs = append(objs, &ps.Items[i])
	}
	_ = h.pods.Replace(objs, "1")
}

// sync runs Sync for a node and refreshes the listers.
func (h *harness) sync(name string) error {
	h.t.Helper()
	err := h.r.Sync(h.ctx, node(name))
	h.refresh()
	return err
}

func (h *harness) job(name string) *batchv1.Job {
	j, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, naming.DiscoveryJobName(name), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return j
}

// finish marks the node's Job finished (finished) and creates its pod on
// ranOn with the given exit code and termination messages.
func (h *harness) finish(name string, finished bool, code int32, ranOn string, msgs ...string) {
	h.t.Helper()
	j := h.job(name)
	if finished {
		cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(h.clock.Now())}
		if code != 0 {
			cond.Type, cond.Reason = batchv1.JobFailed, "BackoffLimitExceeded"
		}
		j.Status.Conditions = append(j.Status.Conditions, cond)
		if _, err := h.kube.BatchV1().Jobs(ns).UpdateStatus(h.ctx, j, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	if ranOn != "" {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-pod", Namespace: ns, Labels: map[string]string{batchv1.JobNameLabel: j.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}},
			Spec: *j.Spec.Template.Spec.DeepCopy()}
		pod.Spec.NodeName = ranOn
		for i, ctr := range pod.Spec.Containers {
			msg := ""
			if i < len(msgs) {
				msg = msgs[i]
			}
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{Name: ctr.Name,
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Message: msg}}})
		}
		if _, err := h.kube.CoreV1().Pods(ns).Create(h.ctx, pod, metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	h.refresh()
}

// events drains the recorded Events into one string.
func (h *harness) events() string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return strings.Join(out, "\n")
}

func encode(t *testing.T, node string, shards int, vols ...string) []string {
	t.Helper()
	c := report.Class{Name: "fast"}
	for _, v := range vols {
		c.Volumes = append(c.Volumes, report.Volume{Name: v, Kind: report.KindDirectory, Capacity: 1 << 30, ID: "fh:1.00"})
	}
	msgs, err := report.Encode(&report.Report{Version: report.Version, Node: node, Classes: []report.Class{c}}, shards)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// dropPod deletes the pod of the node's discovery Job, as the Job's
// deletion does.
func (h *harness) dropPod(name string) {
	_ = h.kube.CoreV1().Pods(ns).Delete(h.ctx, naming.DiscoveryJobName(name)+"-pod", metav1.DeleteOptions{})
	h.refresh()
}
