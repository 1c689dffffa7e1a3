package unwiped

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

func releasedPV(name, node string, id identity.ID, claimed bool) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		jobs.AnnNode: node, jobs.AnnHostPath: "/mnt/fast/" + name, jobs.AnnDiskID: string(id)}}}
	if claimed {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "c"}
	}
	return pv
}

func TestStore(t *testing.T) {
	strong, weak := identity.WWN("naa.1"), identity.FileHandle(1, []byte{1})
	tests := []struct {
		name    string
		pv      *v1.PersistentVolume
		wantKey string
	}{
		{name: "a strong identity is one key on every node", pv: releasedPV("a", "n1", strong, true), wantKey: Key("n2", strong)},
		{name: "a weak identity is per node", pv: releasedPV("b", "n1", weak, true), wantKey: Key("n1", weak)},
		{name: "no identity is not remembered", pv: releasedPV("c", "n1", "", true)},
		{name: "a never claimed PV is not remembered", pv: releasedPV("d", "n1", strong, false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(fake.NewClientset(EmptyConfigMap("lpv")), "lpv", nil)
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
			if d, ok := got[tc.wantKey]; !ok || d.PV != tc.pv.Name || d.ID != diskID(tc.pv) {
				t.Fatalf("entries %v, want %s for PV %s", got, tc.wantKey, tc.pv.Name)
			}
			if err := s.Forget(t.Context(), tc.wantKey); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Load(t.Context()); len(got) != 0 {
				t.Errorf("entries %v after Forget", got)
			}
		})
	}
	if Key("n1", weak) == Key("n2", weak) {
		t.Error("a weak identity has one key on two nodes")
	}
}

func diskID(pv *v1.PersistentVolume) identity.ID { return identity.ID(pv.Annotations[jobs.AnnDiskID]) }

// TestBrokenMemoryIsAnError (review L1 b): a memory that is missing, or
// holds an entry someone edited into garbage, is an error, never "nothing
// unwiped", and is not written over.
func TestBrokenMemoryIsAnError(t *testing.T) {
	good := releasedPV("a", "n1", identity.WWN("naa.1"), true)
	goodRaw := `{"id":"wwn:naa.2","pv":"p","node":"n1"}`
	tests := []struct {
		name    string
		data    map[string]string // nil: no ConfigMap
		wantErr error
	}{
		{name: "missing ConfigMap", wantErr: ErrMissing},
		{name: "entry that is not JSON", data: map[string]string{"x": "not json"}},
		{name: "entry with a bad identity", data: map[string]string{Key("n1", "bad kind:1"): `{"id":"bad kind:1","node":"n1"}`}},
		{name: "entry under another disk's key", data: map[string]string{"disk-0": goodRaw}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			if tc.data != nil {
				cm := EmptyConfigMap("lpv")
				cm.Data = tc.data
				kube = fake.NewClientset(cm)
			}
			s := New(kube, "lpv", nil)
			if _, err := s.Load(t.Context()); err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("Load: %v, want an error (%v)", err, tc.wantErr)
			}
			if err := s.Remember(t.Context(), good, "test"); err == nil {
				t.Error("Remember wrote over a broken memory")
			}
			if _, err := kube.CoreV1().ConfigMaps("lpv").Get(t.Context(), ConfigMapName, metav1.GetOptions{}); tc.data == nil && err == nil {
				t.Error("the missing memory was created empty")
			}
		})
	}
	ok := EmptyConfigMap("lpv")
	ok.Data = map[string]string{Key("n1", "wwn:naa.2"): goodRaw}
	if got, err := New(fake.NewClientset(ok), "lpv", nil).Load(t.Context()); err != nil || got[Key("n1", "wwn:naa.2")].PV != "p" {
		t.Errorf("a good entry: %v, %v", got, err)
	}
}

// TestMemoryIsBounded (review L1 c): the memory never grows past MaxBytes,
// which keeps it below the apiserver's object limit; the disk that would
// cross it is refused with ErrFull (its PV is then kept), and a disk
// already remembered is no error.
func TestMemoryIsBounded(t *testing.T) {
	const node = "node-with-a-long-name-0001"
	pvOf := func(n int) *v1.PersistentVolume {
		return releasedPV(fmt.Sprintf("local-pv-%040d", n), node, identity.WWN(fmt.Sprintf("naa.%016x", n)), true)
	}
	// Filled directly to just below the bound: one Remember per entry
	// would take minutes on the fake clientset.
	cm := EmptyConfigMap("lpv")
	n := 0
	for ; dataSize(cm.Data) < MaxBytes-2048; n++ {
		pv := pvOf(n)
		raw, _ := json.Marshal(Disk{ID: diskID(pv), PV: pv.Name, Node: node, Path: "/mnt/fast/" + pv.Name,
			Since: "2026-01-01T00:00:00Z", Reason: "node " + node + " deleted"})
		cm.Data[Key(node, diskID(pv))] = string(raw)
	}
	if n < 2000 {
		t.Errorf("only %d disks fit", n)
	}
	s := New(fake.NewClientset(cm), "lpv", nil)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = s.Remember(t.Context(), pvOf(n+i), "node "+node+" deleted")
	}
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Remember past the bound: %v, want ErrFull", err)
	}
	got, err := s.Load(t.Context())
	if err != nil || len(got) < n {
		t.Fatalf("Load: %d entries, %v; want at least %d", len(got), err, n)
	}
	if err := s.Remember(t.Context(), pvOf(0), "again"); err != nil {
		t.Errorf("remembering a remembered disk in a full memory: %v", err)
	}
}

// TestExpire (review L1 c): an entry is forgotten unwiped only when it is
// older than the retention and its node left the cluster; a retention of
// 0 keeps every entry.
func TestExpire(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(fake.NewClientset(EmptyConfigMap("lpv")), "lpv", clk)
	weakGone, weakLive := identity.Loop("/var/disks/gone.img", 0, 0), identity.Loop("/var/disks/live.img", 0, 0)
	strongGone := identity.WWN("naa.1")
	for _, pv := range []*v1.PersistentVolume{releasedPV("on-gone", "gone", weakGone, true),
		releasedPV("on-live", "live", weakLive, true), releasedPV("strong-on-gone", "gone", strongGone, true)} {
		if err := s.Remember(t.Context(), pv, "test"); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(node string) bool { return node == "gone" }
	tests := []struct {
		name      string
		after     time.Duration
		retention time.Duration
		want      int
	}{
		{name: "younger than the retention", after: time.Hour, retention: 24 * time.Hour, want: 3},
		{name: "retention 0 keeps everything", after: 48 * time.Hour, retention: 0, want: 3},
		// A strong identity is matched on any node: a deleted node's disk
		// may come back in another machine, so it never expires.
		{name: "older, only the gone node's weak entry goes", after: 48 * time.Hour, retention: 24 * time.Hour, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(tc.after))
			if _, err := s.Expire(t.Context(), tc.retention, gone); err != nil {
				t.Fatal(err)
			}
			got, err := s.Load(t.Context())
			if err != nil || len(got) != tc.want {
				t.Errorf("entries %v (%v), want %d", got, err, tc.want)
			}
			if _, ok := got[Key("gone", strongGone)]; !ok {
				t.Error("the entry of a strong identity expired")
			}
			if _, ok := got[Key("live", weakLive)]; !ok {
				t.Error("the entry of a node still in the cluster expired")
			}
		})
	}
}
