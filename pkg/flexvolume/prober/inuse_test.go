package prober

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestKubeletInUseChecker(t *testing.T) {
	tests := []struct {
		name string
		dirs []string
		want bool
	}{
		{name: "no pods"},
		{name: "other driver", dirs: []string{"pods/uid1/volumes/example.com~other/vol"}},
		{name: "empty plugin dir", dirs: []string{"pods/uid1/volumes/example.com~nfs"}},
		{name: "pod volume", dirs: []string{"pods/uid1/volumes/example.com~nfs/vol"}, want: true},
		{name: "device mount", dirs: []string{"plugins/kubernetes.io/flexvolume/example.com/nfs/mounts/pv1"}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := NewKubeletInUseChecker(root).DriverInUse(t.Context(), "example.com/nfs")
			if err != nil || got != tc.want {
				t.Errorf("DriverInUse = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestNodeStatusInUseChecker(t *testing.T) {
	attached := func(names ...string) v1.NodeStatus {
		var st v1.NodeStatus
		for _, n := range names {
			st.VolumesAttached = append(st.VolumesAttached, v1.AttachedVolume{Name: v1.UniqueVolumeName(n), DevicePath: "/dev/loop1"})
		}
		return st
	}
	inUse := func(names ...string) v1.NodeStatus {
		var st v1.NodeStatus
		for _, n := range names {
			st.VolumesInUse = append(st.VolumesInUse, v1.UniqueVolumeName(n))
		}
		return st
	}
	tests := []struct {
		name     string
		driver   string
		status   []v1.NodeStatus
		unsynced bool
		want     bool
		wantErr  error
	}{
		{name: "no nodes", driver: "example.com/nfs"},
		{name: "attached volume", driver: "example.com/nfs", status: []v1.NodeStatus{attached("example.com/nfs/pv1")}, want: true},
		{name: "volume in use", driver: "example.com/nfs", status: []v1.NodeStatus{{}, inUse("example.com/nfs/pv1")}, want: true},
		{name: "prefix of another driver's name", driver: "example.com/nf", status: []v1.NodeStatus{attached("example.com/nfs/pv1")}},
		{name: "vendor-less driver and a vendor of the same name", driver: "foo", status: []v1.NodeStatus{attached("foo/bar/pv1"), inUse("foo/bar/pv2")}},
		{name: "vendor-less driver", driver: "foo", status: []v1.NodeStatus{inUse("foo/pv1")}, want: true},
		{name: "driver whose vendor is another driver", driver: "foo/bar", status: []v1.NodeStatus{inUse("foo/pv1")}},
		{name: "plugin name alone", driver: "example.com/nfs", status: []v1.NodeStatus{inUse("example.com/nfs/")}},
		{name: "not synced", driver: "example.com/nfs", unsynced: true, wantErr: ErrNodesNotSynced},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for i, st := range tc.status {
				node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}, Status: st}
				if err := idx.Add(node); err != nil {
					t.Fatal(err)
				}
			}
			synced := func() bool { return !tc.unsynced }
			got, err := NewNodeStatusInUseChecker(corelisters.NewNodeLister(idx), synced).DriverInUse(t.Context(), tc.driver)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Errorf("DriverInUse(%q) = %v, %v; want %v, %v", tc.driver, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestRemovalWhileNodesNotSynced: a driver removed from disk while the node
// informer has not synced stays loaded, and is unloaded once the synced
// cache says no volume uses it.
func TestRemovalWhileNodesNotSynced(t *testing.T) {
	root := t.TempDir()
	install(t, root, "example.com~nfs", "nfs", script(capsAttach))
	var synced atomic.Bool
	opts := testOptions(&sink{})
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	opts.InUse = NewNodeStatusInUseChecker(corelisters.NewNodeLister(idx), synced.Load)
	p := newTestProber(t, root, opts)
	waitFor(t, p, "install", ready("example.com/nfs", true))
	if err := os.RemoveAll(filepath.Join(root, "example.com~nfs")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, "removal deferred", func(s *Snapshot) bool {
		e := s.Entries["example.com/nfs"]
		return e != nil && e.State == StateRemoving
	})
	synced.Store(true)
	waitFor(t, p, "unloaded", func(s *Snapshot) bool { return s.Entries["example.com/nfs"] == nil })
}
