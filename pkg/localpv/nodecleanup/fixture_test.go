package nodecleanup

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

const (
	// classes: fast releases claims after 10 minutes, slow never.
	classes = `
fast:
  hostDir: /mnt/fast
  releaseClaimsOfDeletedNodesAfter: 10m
slow:
  hostDir: /mnt/slow
`
	delay = 10 * time.Minute
	ns    = "default"
)

var start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t        *testing.T
	kube     *fake.Clientset
	factory  informers.SharedInformerFactory
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	c        *controller
}

func newFixture(t *testing.T, classMap string, objs ...runtime.Object) *fixture {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: classMap})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, kube: fake.NewClientset(objs...), clock: testingclock.NewFakeClock(start),
		recorder: record.NewFakeRecorder(100)}
	f.factory = informers.NewSharedInformerFactory(f.kube, 0)
	_, ctx := ktesting.NewTestContext(t)
	f.c, err = newController(ctx, f.kube, f.factory.Core().V1().Nodes(), f.factory.Core().V1().PersistentVolumes(),
		f.recorder, Options{Config: cfg, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.c.queue.ShutDown)
	f.syncStores()
	return f
}

// syncStores copies the fake apiserver's Nodes and PVs into the caches.
func (f *fixture) syncStores() {
	f.t.Helper()
	nodes, err := f.kube.CoreV1().Nodes().List(f.t.Context(), metav1.ListOptions{})
	f.replace(f.factory.Core().V1().Nodes().Informer().GetStore(), nodes, err)
	pvs, err := f.kube.CoreV1().PersistentVolumes().List(f.t.Context(), metav1.ListOptions{})
	f.replace(f.factory.Core().V1().PersistentVolumes().Informer().GetStore(), pvs, err)
}

func (f *fixture) replace(store interface {
	Replace([]interface{}, string) error
}, list runtime.Object, err error) {
	f.t.Helper()
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

// sync runs one node name through the controller, as a worker would.
func (f *fixture) sync(node string) {
	f.t.Helper()
	f.syncStores()
	_, ctx := ktesting.NewTestContext(f.t)
	if err := f.c.sync(ctx, node); err != nil {
		f.t.Fatalf("sync %s: %v", node, err)
	}
	f.syncStores()
}

// deleteNode deletes a Node as the apiserver and the informer would
// report it.
func (f *fixture) deleteNode(name string) {
	f.t.Helper()
	node, err := f.kube.CoreV1().Nodes().Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.kube.CoreV1().Nodes().Delete(f.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.syncStores()
	f.c.onNodeDelete(node)
}

// createNode creates a Node; with cached, the informer reports it too.
func (f *fixture) createNode(node *v1.Node, cached bool) {
	f.t.Helper()
	if _, err := f.kube.CoreV1().Nodes().Create(f.t.Context(), node, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	if cached {
		f.syncStores()
		f.c.onNodeAdd(node)
	}
}

func (f *fixture) pv(name string) *v1.PersistentVolume {
	f.t.Helper()
	pv, err := f.kube.CoreV1().PersistentVolumes().Get(f.t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return pv
}

func (f *fixture) claimExists(name string) bool {
	f.t.Helper()
	_, err := f.kube.CoreV1().PersistentVolumeClaims(ns).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	return err == nil
}

// deletes returns the delete actions but the test's own of Nodes, as
// "<resource> <name>".
func (f *fixture) deletes() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if d, ok := a.(core.DeleteAction); ok && d.GetResource().Resource != "nodes" {
			out = append(out, d.GetResource().Resource+" "+d.GetName())
		}
	}
	return out
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

func hasEvent(events []string, substrs ...string) bool {
next:
	for _, e := range events {
		for _, s := range substrs {
			if !strings.Contains(e, s) {
				continue next
			}
		}
		return true
	}
	return false
}

func node(name, machineID, systemUUID string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name + "-" + machineID)}}
	n.Status.NodeInfo.MachineID, n.Status.NodeInfo.SystemUUID = machineID, systemUUID
	return n
}

// boundPV is a PV of the master on node a, machine m1/u1, bound an hour
// before start to the claim.
func boundPV(name, class, claim string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue},
			Annotations: map[string]string{jobs.AnnNode: "a", jobs.AnnClass: class, jobs.AnnHostPath: "/mnt/" + class + "/" + name,
				jobs.AnnMachineID: "m1", jobs.AnnSystemUUID: "u1"},
			Finalizers: []string{jobs.FinalizerPVProtection}},
		Spec: v1.PersistentVolumeSpec{StorageClassName: class, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim, UID: types.UID("uid-" + claim)}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound, LastPhaseTransitionTime: ptr.To(metav1.NewTime(start.Add(-time.Hour)))},
	}
}

// claim is a StatefulSet's claim created an hour before start.
func claim(name, pv string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(start.Add(-time.Hour))},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv},
	}
}

func pod(name string, claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	for i, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "v" + string(rune('0'+i)),
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}
