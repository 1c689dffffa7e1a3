package publishing_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/publishing"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvops/pvopstest"
	"github.com/nodeplug/nodeplug/pkg/localpv/controller/pvstate"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/naming"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
	"github.com/nodeplug/nodeplug/pkg/localpv/validation"
)

const provisioner = "nodeplug.io/local-volume-provisioner"

var (
	start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	disk1 = identity.LocalFileHandle(0, 1, 1, []byte("vol1"))
)

// fakeState is the caches' view, set per case.
type fakeState struct {
	onNode []*v1.PersistentVolume
	taken  bool
	locked bool
}

func (s *fakeState) PVsOnNode(string) ([]*v1.PersistentVolume, error) { return s.onNode, nil }

func (s *fakeState) PVsAt(_, path string) ([]*v1.PersistentVolume, error) {
	var out []*v1.PersistentVolume
	for _, pv := range s.onNode {
		if pv.Annotations[jobs.AnnHostPath] == path {
			out = append(out, pv)
		}
	}
	return out, nil
}

func (s *fakeState) ManagedPV(id string) (*v1.PersistentVolume, error) {
	for _, pv := range s.onNode {
		if pv.Labels[jobs.LabelVolumeID] == id {
			return pv, nil
		}
	}
	return nil, nil
}

func (s *fakeState) PathTaken(string, string, string) (bool, error) { return s.taken, nil }
func (s *fakeState) PathLocked(string, string) (bool, error)        { return s.locked, nil }
func (s *fakeState) CleanupLocked(string) (bool, error)             { return s.locked, nil }
func (s *fakeState) CleanupJobs(string) ([]*batchv1.Job, error)     { return nil, nil }

func testNode() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{v1.LabelHostname: "a-host"}},
		Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{MachineID: "m1", SystemUUID: "u1"}}}
}

func fastClass(owner string) *storagev1.StorageClass {
	policy := v1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, ReclaimPolicy: &policy}
	if owner != "" {
		sc.Annotations = map[string]string{jobs.AnnClassOwner: owner}
	}
	return sc
}

// existingPV is the master's PV of /mnt/fast/<name> on node a (machine
// m1), recording disk id, in phase.
func existingPV(name string, id identity.ID, phase v1.PersistentVolumePhase) *v1.PersistentVolume {
	path := "/mnt/fast/" + name
	vid := naming.MachineVolumeID("a", path, "m1", "u1")
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: naming.PVNameForID(vid), UID: "pv-uid", ResourceVersion: "1",
		Labels: map[string]string{jobs.LabelManagedBy: jobs.ManagedByValue, jobs.LabelVolumeID: vid},
		Annotations: map[string]string{jobs.AnnProvisionedBy: provisioner, jobs.AnnNode: "a", jobs.AnnHostPath: path,
			jobs.AnnClass: "fast", jobs.AnnDiskID: string(id)}},
		Spec:   v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}},
		Status: v1.PersistentVolumeStatus{Phase: phase}}
	machine.Set(pv, machine.Identity{ID: "m1", UUID: "u1"})
	if phase == v1.VolumeBound {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "claim", UID: "claim-uid"}
	}
	return pv
}

type publishCase struct {
	name string
	node *v1.Node
	vols map[string]identity.ID
	// devs are the volumes' kernel device names, where set.
	devs  map[string]string
	state fakeState
	// extra are more objects in the apiserver.
	extra []runtime.Object
	class *storagev1.StorageClass
	// wantPVs are the names of the PVs created.
	wantPVs   []string
	wantOps   []string
	wantEvent string
	// check looks at the apiserver afterwards.
	check func(t *testing.T, kube *fake.Clientset)
}

func TestPublish(t *testing.T) {
	vid := naming.MachineVolumeID("a", "/mnt/fast/vol1", "m1", "u1")
	mine := "lpv/" + provisioner
	tests := []publishCase{
		{name: "an accepted volume gets its PV", vols: map[string]identity.ID{"vol1": disk1}, class: fastClass(""),
			wantPVs: []string{naming.PVNameForID(vid)}, check: func(t *testing.T, kube *fake.Clientset) {
				pv, _ := kube.CoreV1().PersistentVolumes().Get(t.Context(), naming.PVNameForID(vid), metav1.GetOptions{})
				if pv.Annotations[jobs.AnnDiskID] != string(disk1) || machine.Recorded(pv) != (machine.Identity{ID: "m1", UUID: "u1"}) ||
					!slices.Contains(pv.Finalizers, jobs.FinalizerPVProtection) || pv.Spec.Local.Path != "/mnt/fast/vol1" {
					t.Errorf("PV %+v", pv.ObjectMeta)
				}
				sc, _ := kube.StorageV1().StorageClasses().Get(t.Context(), "fast", metav1.GetOptions{})
				if sc.Annotations[jobs.AnnClassOwner] != mine {
					t.Errorf("the class was not claimed: %v", sc.Annotations)
				}
			}},
		{name: "a path that has the volume's PV gets no other", vols: map[string]identity.ID{"vol1": disk1}, class: fastClass(mine),
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", disk1, v1.VolumeBound)}}},
		{name: "a path another PV points at gets none", vols: map[string]identity.ID{"vol1": disk1}, class: fastClass(mine),
			state: fakeState{taken: true}},
		{name: "a path with an unfinished cleanup gets none", vols: map[string]identity.ID{"vol1": disk1}, class: fastClass(mine),
			state: fakeState{locked: true}},
		{name: "a disk without identity gets none", vols: map[string]identity.ID{"vol1": ""}, class: fastClass(mine),
			wantEvent: "DiskIdentityUnknown"},
		{name: "a disk behind a PV of another path gets none", vols: map[string]identity.ID{"vol1": disk1, "vol2": disk1}, class: fastClass(mine),
			state: fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", disk1, v1.VolumeBound)}}, wantEvent: "DiskAlreadyPublished"},
		{name: "a missing StorageClass publishes nothing", vols: map[string]identity.ID{"vol1": disk1},
			wantEvent: "StorageClassNotFound"},
		{name: "another installation's class publishes nothing", vols: map[string]identity.ID{"vol1": disk1},
			class: fastClass("other/provisioner"), wantEvent: "ClassOwnedByAnotherInstallation"},
		{name: "a node without a hostname label publishes nothing", vols: map[string]identity.ID{"vol1": disk1}, class: fastClass(mine),
			node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, wantEvent: "MissingHostnameLabel"},
		{name: "an unused PV whose volume vanished is deleted", class: fastClass(mine),
			state:     fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", disk1, v1.VolumeAvailable)}},
			wantOps:   []string{"delete " + naming.PVNameForID(vid) + " exact=true reason=vanished"},
			wantEvent: "VolumeVanished"},
		{name: "a used PV whose volume vanished is marked missing", class: fastClass(mine),
			state:     fakeState{onNode: []*v1.PersistentVolume{existingPV("vol1", disk1, v1.VolumeBound)}},
			wantOps:   []string{"warnClaim " + naming.PVNameForID(vid) + " VolumeMissing Inaccessible"},
			wantEvent: "VolumeMissing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runPublishCase(t, tc) })
	}
}

func runPublishCase(t *testing.T, tc publishCase) {
	_, ctx := ktesting.NewTestContext(t)
	cfg, _, err := config.Parse(map[string]string{config.KeyStorageClassMap: "fast:\n  hostDir: /mnt/fast\n  mountDir: /mnt/fast\n"})
	if err != nil {
		t.Fatal(err)
	}
	objs := []runtime.Object{}
	classes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if tc.class != nil {
		objs = append(objs, tc.class)
		_ = classes.Add(tc.class)
	}
	for _, pv := range tc.state.onNode {
		objs = append(objs, pv)
	}
	var disks []runtime.Object // UnwipedDisks, unstructured
	for _, o := range tc.extra {
		if _, ok := o.(*unstructured.Unstructured); ok {
			disks = append(disks, o)
		} else {
			objs = append(objs, o)
		}
	}
	kube := fake.NewClientset(objs...)
	kube.ClearActions()
	ops := &pvopstest.Fake{}
	recorder := record.NewFakeRecorder(20)
	p := publishing.New(publishing.Config{Provisioner: cfg, ProvisionerName: provisioner,
		OwnerName: "lpv/" + provisioner, Kube: kube, State: &tc.state,
		Classes: storagelisters.NewStorageClassLister(classes), Ops: ops, Marks: pvstate.New(kube.CoreV1(), testingclock.NewFakeClock(start)), Unwiped: unwipedtest.Store(unwipedtest.Client(disks...), kube, "lpv", testingclock.NewFakeClock(start)),
		Recorder: recorder, Clock: testingclock.NewFakeClock(start), MarksChanged: func() {}, VolumeChanged: func(string) {}})
	node := tc.node
	if node == nil {
		node = testNode()
	}
	c := report.Class{Name: "fast"}
	for _, name := range slices.Sorted(maps.Keys(tc.vols)) {
		c.Volumes = append(c.Volumes, report.Volume{Name: name, Kind: report.KindDirectory, Capacity: 20 << 30, ID: tc.vols[name], Dev: tc.devs[name]})
	}
	res, err := validation.Check(cfg, "a", "a", &report.Report{Version: report.Version, Node: "a", Classes: []report.Class{c}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, node, res, nil); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if created := createdPVs(kube); !slices.Equal(created, tc.wantPVs) {
		t.Errorf("PVs created %v, want %v", created, tc.wantPVs)
	}
	// Volumes of one report are handled in no set order: compare the
	// writes as a set.
	got, want := slices.Sorted(slices.Values(ops.Calls())), slices.Sorted(slices.Values(tc.wantOps))
	if !slices.Equal(got, want) {
		t.Errorf("PV writes %q, want %q", got, want)
	}
	var evs []string
	for len(recorder.Events) > 0 {
		evs = append(evs, <-recorder.Events)
	}
	if all := strings.Join(evs, "\n"); tc.wantEvent != "" && !strings.Contains(all, tc.wantEvent) || tc.wantEvent == "" && all != "" {
		t.Errorf("Events %q, want %q", evs, tc.wantEvent)
	}
	if tc.check != nil {
		tc.check(t, kube)
	}
}

// createdPVs names the PVs created through the fake clientset.
func createdPVs(kube *fake.Clientset) []string {
	var out []string
	for _, a := range kube.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "persistentvolumes" {
			out = append(out, a.(interface{ GetObject() runtime.Object }).GetObject().(*v1.PersistentVolume).Name)
		}
	}
	return out
}
