package unwiped

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
			s := New(fake.NewClientset(), "lpv", nil)
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

// TestLoadSkipsBadEntries: an entry someone edited into garbage is ignored.
func TestLoadSkipsBadEntries(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "lpv"},
		Data: map[string]string{"x": "not json", "y": `{"id":"bad kind:1"}`, "z": `{"id":"wwn:naa.2","pv":"p"}`}}
	s := New(fake.NewClientset(cm), "lpv", nil)
	got, err := s.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["z"].PV != "p" {
		t.Errorf("entries %v, want only z", got)
	}
}
