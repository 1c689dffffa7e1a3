package controller

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"
	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/blockedclaims/blockedclaimstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

const (
	testNS    = "lpv"
	fastClass = `
fast:
  hostDir: /mnt/fast
  mountDir: /mnt/fast
blk:
  hostDir: /mnt/blk
  volumeMode: Block
  blockCleanerCommand: ["blkdiscard", "$(LOCAL_PV_BLKDEVICE)"]
`
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	t        *testing.T
	kube     *fake.Clientset
	factory  informers.SharedInformerFactory
	notif    *dynamicinformer.DynamicSharedInformerFactory
	dyn      *dynamicfake.FakeDynamicClient
	inf      Informers
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
	cfg      *config.Configuration
	c        *controller
	uids     atomic.Int64
	// tweak, when set, changes the controller's options and informers.
	tweak func(*Options, *Informers)
}

func newFixture(t *testing.T, extraConfig map[string]string, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, extraConfig, objs...)
}

// newFixtureWith is newFixture with the controller's options and informers
// changed by tweak.
func newFixtureWith(t *testing.T, tweak func(*Options, *Informers), extraConfig map[string]string, objs ...runtime.Object) *fixture {
	t.Helper()
	data := map[string]string{config.KeyStorageClassMap: fastClass}
	for k, v := range extraConfig {
		data[k] = v
	}
	cfg, _, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, blockedclaimstest.Policy())
	f := &fixture{t: t, kube: fake.NewClientset(objs...), clock: testingclock.NewFakeClock(start), cfg: cfg,
		recorder: record.NewFakeRecorder(1000), tweak: tweak}
	f.kube.PrependReactor("create", "*", f.stampCreate)
	f.restart()
	return f
}

// restart builds a new controller, with empty memory, over the same objects.
func (f *fixture) restart() {
	f.t.Helper()
	f.factory = informers.NewSharedInformerFactory(f.kube, 0)
	if f.dyn == nil {
		f.dyn = unwipedtest.Client()
	}
	nf := dynamicinformer.NewDynamicSharedInformerFactory(f.dyn, 0)
	f.notif = &nf
	f.inf = Informers{Nodes: f.factory.Core().V1().Nodes(), PVs: f.factory.Core().V1().PersistentVolumes(),
		StorageClasses: f.factory.Storage().V1().StorageClasses(), Jobs: f.factory.Batch().V1().Jobs(),
		Pods: f.factory.Core().V1().Pods(), Notifications: nf.ForResource(v1alpha1.SchemeGroupVersionResource).Informer(),
		AdmissionPolicies: f.factory.Admissionregistration().V1().ValidatingAdmissionPolicies()}
	_, ctx := ktesting.NewTestContext(f.t)
	opts := Options{
		Config: f.cfg, ProvisionerName: "nodeplug.io/local-volume-provisioner", Clock: f.clock,
		RetryBase: 10 * time.Second, RetryMax: 5 * time.Minute, DiscoveryQPS: 1000, DiscoveryBurst: 1000,
		Notifications: f.dyn.Resource(v1alpha1.SchemeGroupVersionResource), Unwiped: unwipedtest.Store(f.dyn, f.kube, testNS, f.clock),
		Jobs: jobs.Params{Namespace: testNS, Image: "nodeplug/local-volume-provisioner:dev", ImagePullPolicy: v1.PullIfNotPresent,
			DiscoveryShards: 2, DiscoveryTTL: 300},
	}
	if f.tweak != nil {
		f.tweak(&opts, &f.inf)
	}
	c, err := newController(ctx, f.kube, f.inf, f.recorder, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.c = c
	f.syncStores()
}

// stampCreate gives created objects the UID and timestamp an apiserver would.
func (f *fixture) stampCreate(action core.Action) (bool, runtime.Object, error) {
	obj := action.(core.CreateAction).GetObject()
	m, err := meta.Accessor(obj)
	if err == nil && m.GetUID() == "" {
		m.SetUID(types.UID(fmt.Sprintf("uid-%d", f.uids.Add(1))))
		m.SetCreationTimestamp(metav1.NewTime(f.clock.Now()))
		m.SetResourceVersion("1")
	}
	return false, nil, nil
}

// syncStores copies the fake apiserver's objects into the informer caches.
func (f *fixture) syncStores() {
	f.t.Helper()
	ctx := f.t.Context()
	replace := func(store interface {
		Replace([]interface{}, string) error
	}, list runtime.Object, err error) {
		if err != nil {
			f.t.Fatal(err)
		}
		items, _ := meta.ExtractList(list)
		objs := make([]interface{}, len(items))
		for i := range items {
			objs[i] = items[i]
		}
		if err := store.Replace(objs, "1"); err != nil {
			f.t.Fatal(err)
		}
	}
	nodes, err := f.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	replace(f.inf.Nodes.Informer().GetStore(), nodes, err)
	pvs, err := f.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	replace(f.inf.PVs.Informer().GetStore(), pvs, err)
	scs, err := f.kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	replace(f.inf.StorageClasses.Informer().GetStore(), scs, err)
	js, err := f.kube.BatchV1().Jobs(testNS).List(ctx, metav1.ListOptions{})
	replace(f.inf.Jobs.Informer().GetStore(), js, err)
	pods, err := f.kube.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{})
	replace(f.inf.Pods.Informer().GetStore(), pods, err)
	if f.inf.AdmissionPolicies != nil {
		policies, err := f.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
		replace(f.inf.AdmissionPolicies.Informer().GetStore(), policies, err)
	}
}

// sync runs one key and refreshes the caches.
func (f *fixture) sync(key string) {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	if err := f.c.sync(ctx, key); err != nil {
		f.t.Fatalf("sync %s: %v", key, err)
	}
	f.syncStores()
}

func (f *fixture) job(name string) *batchv1.Job {
	f.t.Helper()
	j, err := f.kube.BatchV1().Jobs(testNS).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return j
}

func (f *fixture) pv(name string) *v1.PersistentVolume {
	pv, err := f.kube.CoreV1().PersistentVolumes().Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return pv
}

func (f *fixture) jobNames(role string) []string {
	js, _ := f.kube.BatchV1().Jobs(testNS).List(f.t.Context(), metav1.ListOptions{})
	var out []string
	for _, j := range js.Items {
		if j.Labels[jobs.LabelRole] == role {
			out = append(out, j.Name)
		}
	}
	return out
}

// finishJob marks a Job finished and creates its pod with the given
// termination messages (one per container).
func (f *fixture) finishJob(name string, succeeded bool, msgs ...string) {
	f.t.Helper()
	j := f.job(name)
	cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(f.clock.Now())}
	if !succeeded {
		cond.Type, cond.Reason = batchv1.JobFailed, "BackoffLimitExceeded"
	}
	j.Status.Conditions = append(j.Status.Conditions, cond)
	if _, err := f.kube.BatchV1().Jobs(testNS).UpdateStatus(f.t.Context(), j, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.finishPod(name, succeeded, msgs...)
}

// finishPod creates the Job's finished pod with the containers' termination
// messages, as the kubelet reports it; the Job's own status is untouched.
func (f *fixture) finishPod(name string, succeeded bool, msgs ...string) {
	f.t.Helper()
	f.finishPodWith(name, succeeded, nil, msgs...)
}

// finishPodWith is finishPod with the pod changed by mutate, when not nil,
// before it is created.
func (f *fixture) finishPodWith(name string, succeeded bool, mutate func(*v1.Pod), msgs ...string) {
	f.t.Helper()
	ctx := f.t.Context()
	j := f.job(name)
	phase, code := v1.PodSucceeded, int32(0)
	if !succeeded {
		phase, code = v1.PodFailed, 1
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-pod", Namespace: testNS,
		Labels:          map[string]string{batchv1.JobNameLabel: name, jobs.LabelRole: j.Labels[jobs.LabelRole]},
		Annotations:     j.Spec.Template.Annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: j.UID, Controller: ptr.To(true)}}},
		Spec: *j.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = j.Annotations[jobs.AnnNode]
	pod.Status.Phase = phase
	for i, ctr := range pod.Spec.Containers {
		msg := ""
		if i < len(msgs) {
			msg = msgs[i]
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{Name: ctr.Name,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Message: msg}}})
	}
	if mutate != nil {
		mutate(pod)
	}
	if _, err := f.kube.CoreV1().Pods(testNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// discover runs a full discovery cycle on a node with the given report.
// Volumes without an identity get one derived from their node, class and
// name, as a disk that stays at its path has; discoverRaw leaves them as
// they are.
func (f *fixture) discover(node string, r *report.Report) {
	f.t.Helper()
	for i := range r.Classes {
		for j := range r.Classes[i].Volumes {
			if v := &r.Classes[i].Volumes[j]; v.ID == "" {
				v.ID = testDiskID(node, r.Classes[i].Name, v.Name)
			}
		}
	}
	f.discoverRaw(node, r)
}

// testDiskID is the identity discover gives a volume that has none.
func testDiskID(node, class, name string) identity.ID {
	return identity.LocalFileHandle(0, 1, 1, []byte(node+"/"+class+"/"+name))
}

// discoverRaw is discover without identities filled in.
func (f *fixture) discoverRaw(node string, r *report.Report) {
	f.t.Helper()
	f.c.requestDiscovery(node)
	f.sync(nodeKey(node))
	name := naming.DiscoveryJobName(node)
	if f.job(name) == nil {
		f.t.Fatalf("no discovery Job for %s", node)
	}
	msgs, err := report.Encode(r, 2)
	if err != nil {
		f.t.Fatal(err)
	}
	f.finishJob(name, true, msgs...)
	f.sync(nodeKey(node))
	_ = f.kube.CoreV1().Pods(testNS).Delete(f.t.Context(), name+"-pod", metav1.DeleteOptions{})
	f.syncStores()
}

// events drains the recorded Events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) wantEvent(substr string) {
	f.t.Helper()
	evs := f.events()
	for _, e := range evs {
		if strings.Contains(e, substr) {
			return
		}
	}
	f.t.Fatalf("no Event containing %q in %q", substr, evs)
}

func (f *fixture) setPhase(name string, phase v1.PersistentVolumePhase, claimed bool) {
	f.t.Helper()
	pv := f.pv(name)
	if claimed {
		f.ensureClaim("default", "claim", "claim-uid")
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}
		if _, err := f.kube.CoreV1().PersistentVolumes().Update(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
		pv = f.pv(name)
	}
	pv.Status.Phase = phase
	if _, err := f.kube.CoreV1().PersistentVolumes().UpdateStatus(f.t.Context(), pv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
}

// ensureClaim creates a claim with a UID unless one of that name exists.
func (f *fixture) ensureClaim(ns, name string, uid types.UID) {
	f.t.Helper()
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
	if _, err := f.kube.CoreV1().PersistentVolumeClaims(ns).Create(f.t.Context(), pvc, metav1.CreateOptions{}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		f.t.Fatal(err)
	}
}

func (f *fixture) notify(node string, generation int64) {
	s := &v1alpha1.NodeDiskState{ObjectMeta: metav1.ObjectMeta{Name: node, Generation: generation},
		Spec: v1alpha1.NodeDiskStateSpec{NodeName: node, Digest: strings.Repeat("a", 64), ObservedTime: metav1.NewTime(f.clock.Now())}}
	u, err := v1alpha1.ToUnstructured(s)
	if err != nil {
		f.t.Fatal(err)
	}
	f.c.onNotification(u)
}

func newNode(name string, lbls map[string]string) *v1.Node {
	l := map[string]string{v1.LabelHostname: name + "-host"}
	for k, v := range lbls {
		l[k] = v
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, UID: types.UID("node-" + name)}}
}

func newClass(name string, policy v1.PersistentVolumeReclaimPolicy) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "kubernetes.io/no-provisioner",
		ReclaimPolicy: &policy, MountOptions: []string{"noatime"}}
}

func fsReport(node string, names ...string) *report.Report {
	c := report.Class{Name: "fast"}
	for _, n := range names {
		c.Volumes = append(c.Volumes, report.Volume{Name: n, Kind: report.KindDirectory, Capacity: 20<<30 + 12345,
			ID: testDiskID(node, "fast", n)})
	}
	return &report.Report{Version: report.Version, Node: node, Classes: []report.Class{c, {Name: "blk"}}}
}
