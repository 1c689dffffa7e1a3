package v1alpha1

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func sample() *NodeDiskState {
	return &NodeDiskState{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "node-a",
			Labels:      map[string]string{"a": "b"},
			Annotations: map[string]string{"c": "d"},
			Finalizers:  []string{"f"},
		},
		Spec: NodeDiskStateSpec{
			NodeName:     "node-a",
			Digest:       strings.Repeat("ab", 32),
			Entries:      3,
			Reason:       ReasonChanged,
			ObservedTime: metav1.NewTime(time.Unix(1700000000, 0)),
		},
		Status: NodeDiskStateStatus{
			Disks: []Disk{{Name: "sda", SizeBytes: 1 << 40, Rotational: true, Model: "ST1000", Vendor: "ATA",
				Serial: "Z1", WWN: "naa.5000c500a1b2c3d4", IDs: []string{"wwn-0x5000c500a1b2c3d4"}, Signature: "none"}},
			DisksTotal:    1,
			InventoryTime: &metav1.Time{Time: time.Unix(1700000001, 0)},
		},
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	in := sample()
	out := in.DeepCopy()
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("copy differs: %+v vs %+v", in, out)
	}
	out.Labels["a"] = "changed"
	out.Annotations["c"] = "changed"
	out.Finalizers[0] = "changed"
	out.Spec.ObservedTime = metav1.NewTime(time.Unix(1, 0))
	if in.Labels["a"] != "b" || in.Annotations["c"] != "d" || in.Finalizers[0] != "f" {
		t.Fatalf("copy shares maps or slices with original: %+v", in.ObjectMeta)
	}
	if in.Spec.ObservedTime.Unix() != 1700000000 {
		t.Fatalf("copy shares time with original")
	}
	out.Status.Disks[0].IDs[0] = "changed"
	out.Status.InventoryTime.Time = time.Unix(2, 0)
	if in.Status.Disks[0].IDs[0] != "wwn-0x5000c500a1b2c3d4" || in.Status.InventoryTime.Unix() != 1700000001 {
		t.Fatalf("copy shares status with original")
	}

	list := &NodeDiskStateList{Items: []NodeDiskState{*sample()}}
	lc := list.DeepCopyObject().(*NodeDiskStateList)
	lc.Items[0].Labels["a"] = "changed"
	if list.Items[0].Labels["a"] != "b" {
		t.Fatalf("list copy shares items")
	}
	var nilState *NodeDiskState
	if nilState.DeepCopy() != nil {
		t.Fatalf("nil copy must be nil")
	}
}

// TestDeepCopyCoversAllFields fails when a field is added to the spec without
// revisiting deepcopy.go.
func TestDeepCopyCoversAllFields(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		want []string
	}{
		{name: "spec", typ: reflect.TypeFor[NodeDiskStateSpec](), want: []string{"NodeName", "Digest", "Entries", "Reason", "ObservedTime"}},
		{name: "status", typ: reflect.TypeFor[NodeDiskStateStatus](), want: []string{"Disks", "DisksTotal", "InventoryTime"}},
		{name: "disk", typ: reflect.TypeFor[Disk](), want: []string{"Name", "SizeBytes", "Rotational", "Removable", "ReadOnly",
			"Model", "Vendor", "Serial", "WWN", "IDs", "Partitions", "Holders", "Stacked", "Signature"}},
		{name: "object", typ: reflect.TypeFor[NodeDiskState](), want: []string{"TypeMeta", "ObjectMeta", "Spec", "Status"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.typ.NumField() != len(tc.want) {
				t.Fatalf("%s has %d fields, deepcopy.go was written for %d", tc.typ, tc.typ.NumField(), len(tc.want))
			}
			for i := range tc.typ.NumField() {
				if tc.typ.Field(i).Name != tc.want[i] {
					t.Errorf("field %s is not handled by deepcopy.go", tc.typ.Field(i).Name)
				}
			}
		})
	}
}

func TestSchemeAndUnstructuredRoundTrip(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if !scheme.Recognizes(SchemeGroupVersionKind) {
		t.Fatalf("scheme does not know %v", SchemeGroupVersionKind)
	}
	u, err := ToUnstructured(sample())
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "localpv.nodeplug.io/v1alpha1" || u.GetKind() != Kind {
		t.Fatalf("unexpected type meta %s %s", u.GetAPIVersion(), u.GetKind())
	}
	back, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	want := sample()
	want.APIVersion, want.Kind = u.GetAPIVersion(), u.GetKind()
	if !reflect.DeepEqual(want.Spec, back.Spec) || !reflect.DeepEqual(want.Status, back.Status) || back.Name != want.Name {
		t.Fatalf("round trip changed object: %+v", back)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*NodeDiskState)
		wantErr string
	}{
		{name: "valid", mutate: func(*NodeDiskState) {}},
		{name: "missing node name", mutate: func(s *NodeDiskState) { s.Spec.NodeName = "" }, wantErr: "spec.nodeName: Required"},
		{name: "node name differs from object name", mutate: func(s *NodeDiskState) { s.Spec.NodeName = "node-b" }, wantErr: "must equal metadata.name"},
		{name: "short digest", mutate: func(s *NodeDiskState) { s.Spec.Digest = "abc" }, wantErr: "spec.digest"},
		{name: "uppercase digest", mutate: func(s *NodeDiskState) { s.Spec.Digest = strings.Repeat("AB", 32) }, wantErr: "spec.digest"},
		{name: "negative entries", mutate: func(s *NodeDiskState) { s.Spec.Entries = -1 }, wantErr: "spec.entries"},
		{name: "unknown reason", mutate: func(s *NodeDiskState) { s.Spec.Reason = "Bored" }, wantErr: "spec.reason: Unsupported value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sample()
			tc.mutate(s)
			err := Validate(s).ToAggregate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}
