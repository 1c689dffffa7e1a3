package inventory_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/inventory"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newClient returns a fake NodeDiskState client holding the states of the
// given nodes, as their watchers create them.
func newClient(t *testing.T, nodes ...string) *dynamicfake.FakeDynamicClient {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.SchemeGroupVersionResource: v1alpha1.ListKind})
	for _, n := range nodes {
		s := &v1alpha1.NodeDiskState{ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: v1alpha1.NodeDiskStateSpec{NodeName: n, Digest: strings.Repeat("a", 64), ObservedTime: metav1.NewTime(start)}}
		u, err := v1alpha1.ToUnstructured(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(v1alpha1.SchemeGroupVersionResource).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn.ClearActions()
	return dyn
}

func status(t *testing.T, dyn *dynamicfake.FakeDynamicClient, node string) v1alpha1.NodeDiskStateStatus {
	t.Helper()
	got, err := dyn.Resource(v1alpha1.SchemeGroupVersionResource).Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := v1alpha1.FromUnstructured(got)
	if err != nil {
		t.Fatal(err)
	}
	return s.Status
}

func statusPatches(dyn *dynamicfake.FakeDynamicClient) int {
	n := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func twoDisks() *report.Report {
	return &report.Report{DisksTotal: 2, Disks: []report.Disk{
		{Name: "sda", Size: 100 << 30, Model: "Samsung SSD 860", Serial: "S1", WWN: "naa.5002538e40a1b2c3", Signature: "none"},
		{Name: "sdb", Size: 1 << 40, Rotational: true, Signature: "ext4"}}}
}

func TestRecordWritesOnlyChanges(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dyn := newClient(t, "a")
	r := inventory.New(dyn.Resource(v1alpha1.SchemeGroupVersionResource), testingclock.NewFakeClock(start))
	r.Record(ctx, "a", twoDisks())
	st := status(t, dyn, "a")
	if st.DisksTotal != 2 || len(st.Disks) != 2 || st.Disks[0].Name != "sda" || st.Disks[0].Serial != "S1" ||
		!st.Disks[1].Rotational || st.Disks[1].Signature != "ext4" || st.InventoryTime == nil {
		t.Errorf("bad status: %+v", st)
	}
	r.Record(ctx, "a", twoDisks())
	if n := statusPatches(dyn); n != 1 {
		t.Errorf("%d status patches for an unchanged inventory, want 1", n)
	}
	r.Forget("a")
	r.Record(ctx, "a", twoDisks())
	if n := statusPatches(dyn); n != 2 {
		t.Errorf("%d status patches after Forget, want 2", n)
	}
}

// TestInventoryClearsWhenDisksGo: a report without a disk list replaces
// the one recorded before; the stale list is not kept beside a fresh time.
func TestInventoryClearsWhenDisksGo(t *testing.T) {
	tests := []struct {
		name      string
		disks     []report.Disk
		total     int
		wantTotal int32
	}{
		{name: "no disks left", disks: nil, total: 0, wantTotal: 0},
		{name: "list dropped for size", disks: nil, total: 2, wantTotal: 2},
		{name: "one disk left", disks: []report.Disk{{Name: "sdb", Size: 1 << 40}}, total: 1, wantTotal: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			dyn := newClient(t, "a")
			clk := testingclock.NewFakeClock(start)
			r := inventory.New(dyn.Resource(v1alpha1.SchemeGroupVersionResource), clk)
			r.Record(ctx, "a", twoDisks())
			if st := status(t, dyn, "a"); len(st.Disks) != 2 {
				t.Fatalf("first inventory not recorded: %+v", st)
			}
			clk.Step(time.Minute)
			r.Record(ctx, "a", &report.Report{Disks: tc.disks, DisksTotal: tc.total})
			st := status(t, dyn, "a")
			if len(st.Disks) != len(tc.disks) || st.DisksTotal != tc.wantTotal {
				t.Errorf("status keeps %d disks (total %d), want %d (total %d): %+v", len(st.Disks), st.DisksTotal, len(tc.disks), tc.wantTotal, st.Disks)
			}
			for i := range tc.disks {
				if st.Disks[i].Name != tc.disks[i].Name {
					t.Errorf("disk %d is %s, want %s", i, st.Disks[i].Name, tc.disks[i].Name)
				}
			}
			if st.InventoryTime == nil || !st.InventoryTime.Time.Equal(clk.Now().Truncate(time.Second)) {
				t.Errorf("inventoryTime %v, want %v", st.InventoryTime, clk.Now())
			}
		})
	}
}

func TestRecordWithoutState(t *testing.T) {
	tests := []struct {
		name string
		// fail makes the apiserver refuse the patch.
		fail bool
	}{
		{name: "a node without a NodeDiskState gets none"},
		{name: "a refused patch is retried by the next report", fail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			dyn := newClient(t)
			if tc.fail {
				dyn = newClient(t, "a")
				dyn.PrependReactor("patch", "*", func(core.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("forbidden")
				})
			}
			r := inventory.New(dyn.Resource(v1alpha1.SchemeGroupVersionResource), testingclock.NewFakeClock(start))
			r.Record(ctx, "a", twoDisks())
			r.Record(ctx, "a", twoDisks())
			if n := statusPatches(dyn); n != 2 {
				t.Errorf("%d status patches, want 2: an unwritten inventory is not remembered as written", n)
			}
			if _, err := dyn.Resource(v1alpha1.SchemeGroupVersionResource).Get(t.Context(), "a", metav1.GetOptions{}); !tc.fail && err == nil {
				t.Error("a NodeDiskState was created")
			}
		})
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name    string
		nodes   []string
		fail    bool
		wantErr string
	}{
		{name: "the deleted node's state goes", nodes: []string{"a"}},
		{name: "a state already gone is no error"},
		{name: "a refused delete is an error", nodes: []string{"a"}, fail: true, wantErr: "failed to delete the NodeDiskState of deleted node a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			dyn := newClient(t, tc.nodes...)
			if tc.fail {
				dyn.PrependReactor("delete", "*", func(core.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("forbidden")
				})
			}
			err := inventory.New(dyn.Resource(v1alpha1.SchemeGroupVersionResource), testingclock.NewFakeClock(start)).Delete(ctx, "a")
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Delete error = %v, want %q", err, tc.wantErr)
			}
			if _, err := dyn.Resource(v1alpha1.SchemeGroupVersionResource).Get(t.Context(), "a", metav1.GetOptions{}); !tc.fail && err == nil {
				t.Error("the NodeDiskState is still there")
			}
		})
	}
}

// TestWithoutClient: without a NodeDiskState client only the gauge is
// set, and Delete does nothing.
func TestWithoutClient(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	r := inventory.New(nil, testingclock.NewFakeClock(start))
	r.Record(ctx, "a", twoDisks())
	if err := r.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete without a client: %v", err)
	}
	r.Forget("a")
}
