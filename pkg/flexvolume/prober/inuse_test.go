package prober

import (
	"os"
	"path/filepath"
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
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	lister := corelisters.NewNodeLister(idx)
	checker := NewNodeStatusInUseChecker(lister)
	if used, _ := checker.DriverInUse(t.Context(), "example.com/nfs"); used {
		t.Error("in use without nodes")
	}
	_ = idx.Add(&v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: v1.NodeStatus{VolumesAttached: []v1.AttachedVolume{
			{Name: "example.com/nfs/pv1", DevicePath: "/dev/loop1"},
		}},
	})
	if used, _ := checker.DriverInUse(t.Context(), "example.com/nfs"); !used {
		t.Error("attached volume not seen")
	}
	if used, _ := checker.DriverInUse(t.Context(), "example.com/nf"); used {
		t.Error("prefix of another driver matched")
	}
}
