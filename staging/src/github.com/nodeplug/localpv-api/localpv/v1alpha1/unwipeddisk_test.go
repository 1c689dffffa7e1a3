package v1alpha1

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sampleUnwiped() *UnwipedDisk {
	return &UnwipedDisk{
		ObjectMeta: metav1.ObjectMeta{Name: "disk-00112233445566778899", Labels: map[string]string{"a": "b"},
			Finalizers: []string{UnwipedDiskFinalizer}},
		Spec: UnwipedDiskSpec{DiskID: "wwn:naa.1", PV: "local-pv-1", Node: "n1", Path: "/mnt/fast/vol0",
			Since: metav1.NewTime(time.Unix(1700000000, 0)), Reason: "node n1 deleted",
			Installation: Installation{Namespace: "lpv", Provisioner: "nodeplug.io/local-volume-provisioner"}},
	}
}

func TestUnwipedDiskDeepCopy(t *testing.T) {
	in := sampleUnwiped()
	out := in.DeepCopyObject().(*UnwipedDisk)
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("copy differs: %+v vs %+v", in, out)
	}
	out.Labels["a"], out.Finalizers[0], out.Spec.Since = "changed", "changed", metav1.NewTime(time.Unix(1, 0))
	if in.Labels["a"] != "b" || in.Finalizers[0] != UnwipedDiskFinalizer || in.Spec.Since.Unix() != 1700000000 {
		t.Fatalf("copy shares memory with the original: %+v", in)
	}
	list := &UnwipedDiskList{Items: []UnwipedDisk{*sampleUnwiped()}}
	lc := list.DeepCopyObject().(*UnwipedDiskList)
	lc.Items[0].Labels["a"] = "changed"
	if list.Items[0].Labels["a"] != "b" {
		t.Fatal("list copy shares items")
	}
	fields := map[reflect.Type][]string{
		reflect.TypeFor[UnwipedDisk]():     {"TypeMeta", "ObjectMeta", "Spec"},
		reflect.TypeFor[UnwipedDiskSpec](): {"DiskID", "PV", "Node", "Path", "Since", "Reason", "Installation"},
		reflect.TypeFor[Installation]():    {"Namespace", "Provisioner"},
	}
	for typ, want := range fields {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s has fields %v; unwipeddisk_deepcopy.go was written for %v", typ, got, want)
		}
	}
}

func TestUnwipedDiskRoundTripAndValidate(t *testing.T) {
	u, err := UnwipedDiskToUnstructured(sampleUnwiped())
	if err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != UnwipedDiskKind || u.GetAPIVersion() != SchemeGroupVersion.String() {
		t.Fatalf("type meta %s %s", u.GetAPIVersion(), u.GetKind())
	}
	back, err := UnwipedDiskFromUnstructured(u)
	if err != nil || !reflect.DeepEqual(back.Spec, sampleUnwiped().Spec) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	tests := []struct {
		name   string
		change func(*UnwipedDisk)
		errs   int
	}{
		{name: "valid", change: func(*UnwipedDisk) {}},
		{name: "no disk identity", change: func(d *UnwipedDisk) { d.Spec.DiskID = "" }, errs: 1},
		{name: "no PV", change: func(d *UnwipedDisk) { d.Spec.PV = "" }, errs: 1},
		{name: "no installation", change: func(d *UnwipedDisk) { d.Spec.Installation.Namespace = "" }, errs: 1},
		{name: "no time", change: func(d *UnwipedDisk) { d.Spec.Since = metav1.Time{} }, errs: 1},
		{name: "path too long", change: func(d *UnwipedDisk) { d.Spec.Path = strings.Repeat("a", MaxPathLength+1) }, errs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := sampleUnwiped()
			tc.change(d)
			if errs := ValidateUnwipedDisk(d); len(errs) != tc.errs {
				t.Errorf("errors %v, want %d", errs, tc.errs)
			}
		})
	}
}
