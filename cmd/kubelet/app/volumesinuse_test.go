//go:build !nodeplug_no_flexdiscovery || !nodeplug_no_mountpods

package app

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/kubelet"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager"
)

// fakeVolumeManager implements the three methods the reporter uses; the
// embedded nil interface panics if it calls any other.
type fakeVolumeManager struct {
	volumemanager.VolumeManager
	synced bool
	inUse  []v1.UniqueVolumeName
	marked [][]v1.UniqueVolumeName
}

func (f *fakeVolumeManager) ReconcilerStatesHasBeenSynced() bool    { return f.synced }
func (f *fakeVolumeManager) GetVolumesInUse() []v1.UniqueVolumeName { return f.inUse }
func (f *fakeVolumeManager) MarkVolumesAsReportedInUse(v []v1.UniqueVolumeName) {
	f.marked = append(f.marked, v)
}

func TestInUseReporter(t *testing.T) {
	const a, b = v1.UniqueVolumeName("drv/a"), v1.UniqueVolumeName("drv/b")
	cases := map[string]struct {
		synced     bool
		onNode     []v1.UniqueVolumeName
		inUse      []v1.UniqueVolumeName
		conflict   bool
		wantAdded  int
		wantNode   []v1.UniqueVolumeName
		wantMarked []v1.UniqueVolumeName // nil: not marked
		wantCalls  int
	}{
		"reconciler not synced: nothing is read": {inUse: []v1.UniqueVolumeName{a}},
		"nothing in use":                         {synced: true},
		"missing volume is added, then marked": {synced: true, onNode: []v1.UniqueVolumeName{b}, inUse: []v1.UniqueVolumeName{a},
			wantAdded: 1, wantNode: []v1.UniqueVolumeName{a, b}, wantMarked: []v1.UniqueVolumeName{a, b}, wantCalls: 2},
		"already on the node: marked, no patch": {synced: true, onNode: []v1.UniqueVolumeName{a}, inUse: []v1.UniqueVolumeName{a},
			wantNode: []v1.UniqueVolumeName{a}, wantMarked: []v1.UniqueVolumeName{a}, wantCalls: 1},
		"conflict: not marked, retried next round": {synced: true, inUse: []v1.UniqueVolumeName{a}, conflict: true,
			wantCalls: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7"}, Status: v1.NodeStatus{VolumesInUse: tc.onNode}}
			client := fake.NewClientset(node)
			if tc.conflict {
				client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n", nil)
				})
			}
			vm := &fakeVolumeManager{synced: tc.synced, inUse: tc.inUse}
			r := &inUseReporter{vm: vm, client: client, node: "n", marked: sets.New[v1.UniqueVolumeName]()}
			added, err := r.report(context.Background())
			if err != nil || added != tc.wantAdded {
				t.Fatalf("report() = %d, %v; want %d, nil", added, err, tc.wantAdded)
			}
			if got := len(client.Actions()); got != tc.wantCalls {
				t.Errorf("%d API calls %v, want %d", got, client.Actions(), tc.wantCalls)
			}
			if tc.wantMarked == nil && len(vm.marked) > 0 || tc.wantMarked != nil && (len(vm.marked) != 1 || !sets.New(vm.marked[0]...).Equal(sets.New(tc.wantMarked...))) {
				t.Errorf("marked %v, want %v", vm.marked, tc.wantMarked)
			}
			if tc.wantNode != nil {
				got, _ := client.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
				if !sets.New(got.Status.VolumesInUse...).Equal(sets.New(tc.wantNode...)) {
					t.Errorf("node volumesInUse %v, want %v", got.Status.VolumesInUse, tc.wantNode)
				}
			}
			// A second round with nothing new in use costs no API call,
			// unless the first could not report.
			calls := len(client.Actions())
			if _, err := r.report(context.Background()); err != nil {
				t.Fatal(err)
			}
			if extra := len(client.Actions()) - calls; (extra > 0) != (tc.conflict) {
				t.Errorf("second round made %d API calls (conflict before: %v)", extra, tc.conflict)
			}
			// A volume that goes out of use and is wanted again is read
			// again: the kubelet may have taken it off the node meanwhile.
			if len(tc.inUse) > 0 && tc.synced {
				vm.inUse = nil
				if _, err := r.report(context.Background()); err != nil {
					t.Fatal(err)
				}
				vm.inUse = tc.inUse
				calls = len(client.Actions())
				if _, err := r.report(context.Background()); err != nil {
					t.Fatal(err)
				}
				if len(client.Actions()) == calls {
					t.Errorf("a volume wanted in use again was not checked against the node")
				}
			}
		})
	}
}

// TestKubeletVolumeManagerField fails if upstream's Kubelet no longer has
// the field the reporter reads (hack/upstream-internals.txt).
func TestKubeletVolumeManagerField(t *testing.T) {
	_, err := kubeletVolumeManager(&kubelet.Kubelet{})
	if !errors.Is(err, errNoVolumeManager) {
		t.Fatalf("kubeletVolumeManager(empty Kubelet) = %v; want the not-yet error, which means the field exists with the expected type", err)
	}
}
