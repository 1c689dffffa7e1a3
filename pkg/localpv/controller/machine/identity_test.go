package machine_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplug/nodeplug/pkg/localpv/controller/machine"
	"github.com/nodeplug/nodeplug/pkg/localpv/jobs"
)

func TestDiffers(t *testing.T) {
	tests := []struct {
		name string
		a, b machine.Identity
		want bool
	}{
		{name: "the same machine", a: machine.Identity{ID: "m1", UUID: "u1"}, b: machine.Identity{ID: "m1", UUID: "u1"}},
		{name: "another machine ID", a: machine.Identity{ID: "m1", UUID: "u1"}, b: machine.Identity{ID: "m2", UUID: "u1"}, want: true},
		{name: "another system UUID", a: machine.Identity{ID: "m1", UUID: "u1"}, b: machine.Identity{ID: "m1", UUID: "u2"}, want: true},
		{name: "a field one side lacks proves nothing", a: machine.Identity{ID: "m1", UUID: "u1"}, b: machine.Identity{UUID: "u1"}},
		{name: "fields on different sides prove nothing", a: machine.Identity{ID: "m1"}, b: machine.Identity{UUID: "u1"}},
		{name: "nothing known", a: machine.Identity{}, b: machine.Identity{ID: "m1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Differs(tc.b); got != tc.want {
				t.Errorf("%s differs from %s = %t, want %t", tc.a, tc.b, got, tc.want)
			}
			if got := tc.b.Differs(tc.a); got != tc.want {
				t.Errorf("not symmetric: %s differs from %s = %t", tc.b, tc.a, got)
			}
		})
	}
}

func TestNodeAndPV(t *testing.T) {
	node := &v1.Node{Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{MachineID: "m1", SystemUUID: "u1"}}}
	if got := machine.Of(node); got != (machine.Identity{ID: "m1", UUID: "u1"}) || !got.Known() {
		t.Errorf("Of = %+v", got)
	}
	if (machine.Identity{}).Known() {
		t.Error("an empty identity is known")
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{jobs.AnnMachineID: "old", jobs.AnnSystemUUID: "old"}}}
	machine.Set(pv, machine.Identity{UUID: "u2"})
	if _, ok := pv.Annotations[jobs.AnnMachineID]; ok || pv.Annotations[jobs.AnnSystemUUID] != "u2" {
		t.Errorf("Set left %v, want only the system UUID u2", pv.Annotations)
	}
	if got := machine.Recorded(pv); got != (machine.Identity{UUID: "u2"}) {
		t.Errorf("Recorded = %+v", got)
	}
	if machine.Marked(pv) {
		t.Error("an unmarked PV is marked")
	}
	pv.Annotations[jobs.AnnMachineReplaced] = "2026-01-01T00:00:00Z"
	if !machine.Marked(pv) {
		t.Error("a marked PV is not marked")
	}
}
