package unwiped_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func releasedPV(name, node string, id identity.ID, claimed bool) *v1.PersistentVolume {
	return releasedPVAt(name, node, "/mnt/fast/"+name, id, claimed)
}

func releasedPVAt(name, node, path string, id identity.ID, claimed bool) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		jobs.AnnNode: node, jobs.AnnHostPath: path, jobs.AnnDiskID: string(id)}}}
	if claimed {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "c"}
	}
	return pv
}

func newStore(t *testing.T, ns string, objs ...runtime.Object) (unwiped.Store, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dyn := unwipedtest.Client(objs...)
	return unwipedtest.Store(dyn, fake.NewClientset(), ns, testingclock.NewFakeClock(start)), dyn
}

func diskID(pv *v1.PersistentVolume) identity.ID { return identity.ID(pv.Annotations[jobs.AnnDiskID]) }

func TestStore(t *testing.T) {
	strong, weak := identity.WWN("naa.1"), identity.FileHandle(1, []byte{1})
	tests := []struct {
		name    string
		pv      *v1.PersistentVolume
		wantKey string
	}{
		{name: "a strong identity is one key on every node and path", pv: releasedPV("a", "n1", strong, true),
			wantKey: unwiped.Key("n2", "/elsewhere", strong)},
		{name: "a weak identity is per node and path", pv: releasedPV("b", "n1", weak, true), wantKey: unwiped.Key("n1", "/mnt/fast/b", weak)},
		{name: "no identity is not remembered", pv: releasedPV("c", "n1", "", true)},
		{name: "a never claimed PV is not remembered", pv: releasedPV("d", "n1", strong, false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, dyn := newStore(t, "lpv")
			if err := s.Remember(t.Context(), tc.pv, "test"); err != nil {
				t.Fatal(err)
			}
			got, err := s.Load(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantKey == "" {
				if len(got) != 0 {
					t.Errorf("remembered %v", got)
				}
				return
			}
			if d, ok := got[tc.wantKey]; !ok || d.PV != tc.pv.Name || d.ID != diskID(tc.pv) || d.Installation != "lpv" {
				t.Fatalf("entries %v, want %s for PV %s", got, tc.wantKey, tc.pv.Name)
			}
			u, err := dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource).Get(t.Context(), tc.wantKey, metav1.GetOptions{})
			if err != nil || len(u.GetFinalizers()) != 1 || u.GetFinalizers()[0] != v1alpha1.UnwipedDiskFinalizer {
				t.Fatalf("the entry is not guarded by the finalizer: %v, %v", u, err)
			}
			if err := s.Forget(t.Context(), tc.wantKey); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Load(t.Context()); len(got) != 0 {
				t.Errorf("entries %v after Forget", got)
			}
		})
	}
	if unwiped.Key("n1", "/p", weak) == unwiped.Key("n2", "/p", weak) || unwiped.Key("n1", "/p", weak) == unwiped.Key("n1", "/q", weak) {
		t.Error("a weak identity has one key on two nodes or paths")
	}
}

// TestWeakKeysDoNotCollide (later review): two PVs of one node recorded as
// the same legacy file handle (every ext4 root has one) are two entries,
// and forgetting one keeps the other. With the key of node and identity
// alone the second Remember was a no-op and the Forget dropped both.
func TestWeakKeysDoNotCollide(t *testing.T) {
	legacy := identity.FileHandle(1, []byte{2, 0, 0, 0})
	a, b := releasedPVAt("a", "n1", "/mnt/fast/vol0", legacy, true), releasedPVAt("b", "n1", "/mnt/fast/vol1", legacy, true)
	s, _ := newStore(t, "lpv")
	for _, pv := range []*v1.PersistentVolume{a, b} {
		if err := s.Remember(t.Context(), pv, "test"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Load(t.Context())
	if err != nil || len(got) != 2 {
		t.Fatalf("entries %v (%v), want two", got, err)
	}
	if err := s.Forget(t.Context(), unwiped.Key("n1", "/mnt/fast/vol0", legacy)); err != nil {
		t.Fatal(err)
	}
	got, err = s.Load(t.Context())
	if d, ok := got[unwiped.Key("n1", "/mnt/fast/vol1", legacy)]; err != nil || len(got) != 1 || !ok || d.PV != "b" {
		t.Errorf("entries %v (%v), want PV b's alone", got, err)
	}
}

// TestMemoryIsSharedByInstallations (review L1 d): the disk one
// installation dropped is known to every other, which may forget it once
// it wiped it.
func TestMemoryIsSharedByInstallations(t *testing.T) {
	dyn := unwipedtest.Client()
	clk := testingclock.NewFakeClock(start)
	a := unwipedtest.Store(dyn, fake.NewClientset(), "install-a", clk)
	b := unwipedtest.Store(dyn, fake.NewClientset(), "install-b", clk)
	pv := releasedPV("a", "n1", identity.WWN("naa.1"), true)
	if err := a.Remember(t.Context(), pv, "node n1 deleted"); err != nil {
		t.Fatal(err)
	}
	if err := b.Remember(t.Context(), pv, "again"); err != nil {
		t.Errorf("remembering a disk another installation remembered: %v", err)
	}
	key := unwiped.Key("n1", "", diskID(pv))
	got, err := b.Load(t.Context())
	if d, ok := got[key]; err != nil || !ok || d.Installation != "install-a" || d.Reason != "node n1 deleted" {
		t.Fatalf("installation b sees %v (%v), want installation a's disk", got, err)
	}
	if err := b.Forget(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Load(t.Context()); err != nil || len(got) != 0 {
		t.Errorf("installation a sees %v (%v) after b forgot", got, err)
	}
}

// TestDeletedEntryIsRemembered (review L1 b): an entry someone deleted
// waits on its finalizer and still counts; only Forget lets it go.
func TestDeletedEntryIsRemembered(t *testing.T) {
	dyn := unwipedtest.Client()
	recorder := record.NewFakeRecorder(10)
	s := unwiped.New(unwiped.Options{Disks: dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource), Kube: fake.NewClientset(),
		Namespace: "lpv", Recorder: recorder})
	pv := releasedPV("a", "n1", identity.WWN("naa.1"), true)
	if err := s.Remember(t.Context(), pv, "test"); err != nil {
		t.Fatal(err)
	}
	key := unwiped.Key("n1", "", diskID(pv))
	client := dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource)
	u, err := client.Get(t.Context(), key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(start) // what the apiserver does with a delete of an object with a finalizer
	u.SetDeletionTimestamp(&now)
	if _, err := client.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := s.Load(t.Context()); err != nil || got[key].PV != "a" {
			t.Fatalf("entries %v (%v): the deleted entry does not count", got, err)
		}
	}
	if n := len(recorder.Events); n != 1 {
		t.Errorf("%d Events on the deleted entry, want one", n)
	} else if ev := <-recorder.Events; !strings.Contains(ev, "UnwipedDiskDeletionHeld") {
		t.Errorf("Event %q", ev)
	}
	if err := s.Forget(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(t.Context(), key, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the entry is still there after Forget: %v", err)
	}
}

func entry(name, id, node, path string) *v1alpha1.UnwipedDisk {
	return &v1alpha1.UnwipedDisk{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1alpha1.UnwipedDiskFinalizer}},
		Spec: v1alpha1.UnwipedDiskSpec{DiskID: id, PV: "p", Node: node, Path: path, Since: metav1.NewTime(start),
			Installation: v1alpha1.Installation{Namespace: "lpv"}}}
}

func object(t testing.TB, d *v1alpha1.UnwipedDisk) runtime.Object {
	t.Helper()
	u, err := v1alpha1.UnwipedDiskToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestBrokenMemoryIsAnError (review L1 b): a memory that is not served, or
// holds an entry someone edited into garbage, is an error, never "nothing
// unwiped", and is not written to.
func TestBrokenMemoryIsAnError(t *testing.T) {
	good := releasedPV("a", "n1", identity.WWN("naa.1"), true)
	tests := []struct {
		name     string
		entry    *v1alpha1.UnwipedDisk
		notFound bool
		wantErr  error
	}{
		{name: "API not served", notFound: true, wantErr: unwiped.ErrMissing},
		{name: "entry with a bad identity", entry: entry(unwiped.Key("n1", "", "bad kind:1"), "bad kind:1", "n1", "")},
		{name: "entry under another disk's key", entry: entry("disk-00000000000000000000", "wwn:naa.2", "n1", "")},
		{name: "entry without a PV", entry: func() *v1alpha1.UnwipedDisk {
			e := entry(unwiped.Key("n1", "", "wwn:naa.2"), "wwn:naa.2", "n1", "")
			e.Spec.PV = ""
			return e
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.entry != nil {
				objs = append(objs, object(t, tc.entry))
			}
			s, dyn := newStore(t, "lpv", objs...)
			if tc.notFound {
				dyn.PrependReactor("*", v1alpha1.UnwipedDiskResource, func(core.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewNotFound(v1alpha1.UnwipedDiskGroupVersionResource.GroupResource(), "")
				})
			}
			if _, err := s.Load(t.Context()); err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("Load: %v, want an error (%v)", err, tc.wantErr)
			}
			if err := s.Remember(t.Context(), good, "test"); err == nil {
				t.Error("Remember wrote to a broken memory")
			}
		})
	}
	ok := object(t, entry(unwiped.Key("n1", "", "wwn:naa.2"), "wwn:naa.2", "n1", ""))
	if got, err := unwipedtest.Store(unwipedtest.Client(ok), fake.NewClientset(), "lpv", nil).Load(t.Context()); err != nil ||
		got[unwiped.Key("n1", "", "wwn:naa.2")].PV != "p" {
		t.Errorf("a good entry: %v, %v", got, err)
	}
}

// TestMemoryIsBounded (review L1 c): the memory never grows past its
// bound (MaxEntries, here a smaller one); the disk that would cross it is
// refused with ErrFull (its PV is then kept), and a disk already
// remembered is no error.
func TestMemoryIsBounded(t *testing.T) {
	const bound = 100
	objs := make([]runtime.Object, 0, bound)
	for n := range bound {
		id := fmt.Sprintf("wwn:naa.%016x", n+1)
		objs = append(objs, object(t, entry(unwiped.Key("n1", "", identity.ID(id)), id, "n1", "")))
	}
	dyn := unwipedtest.Client(objs...)
	s := unwiped.New(unwiped.Options{Disks: dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource), Kube: fake.NewClientset(),
		Namespace: "lpv", MaxEntries: bound})
	err := s.Remember(t.Context(), releasedPV("new", "n1", identity.WWN(fmt.Sprintf("naa.%016x", bound+1)), true), "test")
	if !errors.Is(err, unwiped.ErrFull) {
		t.Fatalf("Remember past the bound: %v, want ErrFull", err)
	}
	if err := s.Remember(t.Context(), releasedPV("old", "n1", identity.WWN(fmt.Sprintf("naa.%016x", 1)), true), "again"); err != nil {
		t.Errorf("remembering a remembered disk in a full memory: %v", err)
	}
}
