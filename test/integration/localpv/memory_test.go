package localpv

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
)

// TestUnwipedMemoryIsShared runs the memory of unwiped disks on a real
// apiserver, with the shipped CRD and the master's shipped rights: the
// master moves the legacy ConfigMap into UnwipedDisks and deletes it; a
// second installation, in another namespace, sees and keeps the first's
// disks (review L1 d); a deleted entry waits on its finalizer and still
// counts until a master forgets it; the CRD refuses an entry that is not
// named by a key and a change of a remembered disk.
func TestUnwipedMemoryIsShared(t *testing.T) {
	e := newEnv(t, "namespace.yaml", "rbac-master.yaml")
	weak, strong := identity.FileHandle(1, []byte{2, 0, 0, 0}), identity.WWN("naa.5000c500a1b2c3d4")
	legacy := map[string]string{}
	for _, d := range []unwiped.Disk{{ID: weak, PV: "pv-a", Node: "node-a", Path: "/mnt/fast/vol0", Since: "2026-01-01T00:00:00Z"},
		{ID: strong, PV: "pv-b", Node: "node-a", Path: "/mnt/blk/sdb", Since: "2026-01-01T00:00:00Z"}} {
		raw, _ := json.Marshal(d)
		legacy[unwiped.LegacyKey(d.Node, d.ID)] = string(raw)
	}
	cms := e.cp.Client.CoreV1().ConfigMaps(namespace)
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: unwiped.LegacyConfigMapName},
		Data: legacy}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	master := asMaster(e.cp.Config)
	disks := dynamic.NewForConfigOrDie(master).Resource(v1alpha1.UnwipedDiskGroupVersionResource)
	a := unwiped.New(unwiped.Options{Disks: disks, Kube: kubernetes.NewForConfigOrDie(master), Namespace: namespace})
	// Another installation's master, with its own rights in its namespace.
	b := unwiped.New(unwiped.Options{Disks: disks, Kube: e.cp.Client, Namespace: "other"})

	got, err := a.Load(t.Context())
	if err != nil || len(got) != 2 {
		t.Fatalf("installation a's memory after the move: %v (%v), want both legacy entries", got, err)
	}
	if _, err := cms.Get(t.Context(), unwiped.LegacyConfigMapName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the legacy ConfigMap after the move: %v, want it deleted", err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-c", Annotations: map[string]string{
		jobs.AnnNode: "node-b", jobs.AnnHostPath: "/mnt/fast/vol1", jobs.AnnDiskID: string(weak)}},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "c"}}}
	if err := b.Remember(t.Context(), pv, "node node-b deleted"); err != nil {
		t.Fatal(err)
	}
	got, err = a.Load(t.Context())
	key := unwiped.Key("node-b", "/mnt/fast/vol1", weak)
	if d, ok := got[key]; err != nil || len(got) != 3 || !ok || d.Installation != "other" {
		t.Fatalf("installation a sees %v (%v), want installation b's disk too", got, err)
	}

	// Someone deletes an entry: it waits on its finalizer and still counts.
	if err := e.dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource).Delete(t.Context(), key, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Load(t.Context()); err != nil || got[key].PV != "pv-c" {
		t.Fatalf("after a deletion: %v (%v), want the entry still remembered", got, err)
	}
	if err := a.Forget(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := disks.Get(t.Context(), key, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the entry after Forget: %v, want it gone", err)
	}

	admin := e.dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource)
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.UnwipedDiskKind,
		"metadata": map[string]any{"name": "not-a-key"}, "spec": map[string]any{"diskID": "wwn:naa.1", "pv": "p",
			"since": "2026-01-01T00:00:00Z", "installation": map[string]any{"namespace": "x"}}}}
	if _, err := admin.Create(t.Context(), bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("an entry not named by a key: %v, want it refused", err)
	}
	u, err := admin.Get(t.Context(), unwiped.Key("", "", strong), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, "wwn:naa.5000c500a1b2c3d5", "spec", "diskID")
	if _, err := admin.Update(t.Context(), u, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a changed disk: %v, want it refused", err)
	}
}
