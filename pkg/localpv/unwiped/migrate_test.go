package unwiped_test

import (
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

// TestExpire (review L1 c): an entry is forgotten unwiped only when it is
// older than the retention and its node left the cluster; a retention of
// 0 keeps every entry.
func TestExpire(t *testing.T) {
	clk := testingclock.NewFakeClock(start)
	s := unwipedtest.Store(unwipedtest.Client(), fake.NewClientset(), "lpv", clk)
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
			clk.SetTime(start.Add(tc.after))
			if _, err := s.Expire(t.Context(), tc.retention, gone); err != nil {
				t.Fatal(err)
			}
			got, err := s.Load(t.Context())
			if err != nil || len(got) != tc.want {
				t.Errorf("entries %v (%v), want %d", got, err, tc.want)
			}
			if _, ok := got[unwiped.Key("gone", "", strongGone)]; !ok {
				t.Error("the entry of a strong identity expired")
			}
			if _, ok := got[unwiped.Key("live", "/mnt/fast/on-live", weakLive)]; !ok {
				t.Error("the entry of a node still in the cluster expired")
			}
		})
	}
}

// legacyConfigMap is the memory as a master before UnwipedDisks kept it,
// each entry under its key of that time (node and identity).
func legacyConfigMap(t *testing.T, entries map[string]unwiped.Disk, garbage map[string]string) *v1.ConfigMap {
	t.Helper()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "lpv", Name: unwiped.LegacyConfigMapName}, Data: map[string]string{}}
	for k, d := range entries {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[k] = string(raw)
	}
	for k, v := range garbage {
		cm.Data[k] = v
	}
	return cm
}

// TestLegacyMemoryMoves: a master that finds the legacy ConfigMap moves
// every entry into UnwipedDisks, under its new key, and only then deletes
// the ConfigMap; an entry that does not parse moves nothing and fails the
// master closed. A held PV of that time carries the old key: Forget of it
// forgets the moved entry.
func TestLegacyMemoryMoves(t *testing.T) {
	weak, strong := identity.FileHandle(1, []byte{2}), identity.WWN("naa.5000c500a1b2c3d4")
	entries := map[string]unwiped.Disk{
		unwiped.LegacyKey("n1", weak): {ID: weak, PV: "a", Node: "n1", Path: "/mnt/fast/vol0", Since: "2026-01-01T00:00:00Z", Reason: "r"},
		unwiped.LegacyKey("n1", strong): {ID: strong, PV: "b", Node: "n1", Path: "/mnt/blk/sdb", Since: "2026-01-01T00:00:00Z",
			Reason: "r"},
	}
	tests := []struct {
		name    string
		garbage map[string]string
		wantErr bool
	}{
		{name: "every entry moves"},
		{name: "an entry that does not parse moves nothing", garbage: map[string]string{"disk-x": "not json"}, wantErr: true},
		{name: "an entry under another key moves nothing", garbage: map[string]string{"disk-0": `{"id":"wwn:naa.2","pv":"p"}`},
			wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(legacyConfigMap(t, entries, tc.garbage))
			dyn := unwipedtest.Client()
			s := unwipedtest.Store(dyn, kube, "lpv", testingclock.NewFakeClock(start))
			got, err := s.Load(t.Context())
			_, cmErr := kube.CoreV1().ConfigMaps("lpv").Get(t.Context(), unwiped.LegacyConfigMapName, metav1.GetOptions{})
			objs, _ := dyn.Resource(v1alpha1.UnwipedDiskGroupVersionResource).List(t.Context(), metav1.ListOptions{})
			if tc.wantErr {
				if err == nil || cmErr != nil || len(objs.Items) != 0 {
					t.Fatalf("Load: %v, ConfigMap: %v, %d entries moved; want an error, the ConfigMap and nothing moved",
						err, cmErr, len(objs.Items))
				}
				return
			}
			if err != nil || len(got) != 2 || !apierrors.IsNotFound(cmErr) {
				t.Fatalf("Load: %v (%v), ConfigMap: %v; want both entries and no ConfigMap", got, err, cmErr)
			}
			if d := got[unwiped.Key("n1", "/mnt/fast/vol0", weak)]; d.PV != "a" || d.Since != "2026-01-01T00:00:00Z" {
				t.Errorf("the weak entry moved as %+v", d)
			}
			if err := s.Forget(t.Context(), unwiped.LegacyKey("n1", weak)); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Load(t.Context()); err != nil || len(got) != 1 || got[unwiped.Key("", "", strong)].PV != "b" {
				t.Errorf("after Forget of the weak entry's legacy key: %v, %v", got, err)
			}
		})
	}
}
