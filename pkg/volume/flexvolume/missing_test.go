package flexvolume

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/volume"
)

type scriptedProber struct{ calls [][]volume.ProbeEvent }

func (s *scriptedProber) Init() error { return nil }
func (s *scriptedProber) Probe() ([]volume.ProbeEvent, error) {
	if len(s.calls) == 0 {
		return nil, nil
	}
	ev := s.calls[0]
	s.calls = s.calls[1:]
	return ev, nil
}

func flexVolumeSpec(driver string) *volume.Spec {
	return volume.NewSpecFromVolume(&v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
		FlexVolume: &v1.FlexVolumeSource{Driver: driver}}})
}

func TestMissingDriverPlugin(t *testing.T) {
	inner := &scriptedProber{calls: [][]volume.ProbeEvent{
		{{PluginName: "vendor/installed", Op: volume.ProbeAddOrUpdate}},
		{{PluginName: "vendor/installed", Op: volume.ProbeRemove}},
	}}
	w := WithMissingDriverPlugin(inner, "node-b", []string{"/flex", "/pods"})
	events, err := w.Probe()
	if err != nil || len(events) != 2 || events[1].PluginName != MissingDriverPluginName {
		t.Fatalf("first Probe: %v %v; want the inner event and the missing-driver plugin", events, err)
	}
	p := events[1].Plugin
	cases := map[string]struct {
		spec *volume.Spec
		want bool
	}{
		"an installed driver":    {spec: flexVolumeSpec("vendor/installed"), want: false},
		"a driver not installed": {spec: flexVolumeSpec("vendor/absent"), want: true},
		"not a flexVolume": {spec: volume.NewSpecFromVolume(&v1.Volume{Name: "e", VolumeSource: v1.VolumeSource{
			EmptyDir: &v1.EmptyDirVolumeSource{}}}), want: false},
		"no spec": {spec: nil, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.CanSupport(tc.spec); got != tc.want {
				t.Fatalf("CanSupport = %v, want %v", got, tc.want)
			}
		})
	}
	_, err = p.GetVolumeName(flexVolumeSpec("vendor/absent"))
	for _, want := range []string{`"vendor/absent"`, "node-b", "/flex/vendor~absent/absent", "DaemonSet"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GetVolumeName error %v does not say %q", err, want)
		}
	}
	if events, _ := w.Probe(); len(events) != 1 || events[0].Op != volume.ProbeRemove {
		t.Fatalf("second Probe: %v; want only the inner removal", events)
	}
	if !p.CanSupport(flexVolumeSpec("vendor/installed")) {
		t.Error("a removed driver is not answered for")
	}
}
