package flexadapter

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/kubernetes/pkg/volume"
)

// scripted returns one scripted batch of events per Probe.
type scripted struct {
	batches [][]volume.ProbeEvent
	err     error
}

func (s *scripted) Init() error { return nil }
func (s *scripted) Probe() ([]volume.ProbeEvent, error) {
	if len(s.batches) == 0 {
		return nil, nil
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	return b, s.err
}

type namedPlugin struct {
	volume.VolumePlugin
	id string
}

func add(name, id string) volume.ProbeEvent {
	return volume.ProbeEvent{PluginName: name, Plugin: &namedPlugin{id: id}, Op: volume.ProbeAddOrUpdate}
}
func remove(name string) volume.ProbeEvent {
	return volume.ProbeEvent{PluginName: name, Op: volume.ProbeRemove}
}

func describe(evs []volume.ProbeEvent) string {
	s := ""
	for _, e := range evs {
		if e.Op == volume.ProbeRemove {
			s += fmt.Sprintf("-%s ", e.PluginName)
		} else {
			s += fmt.Sprintf("+%s=%s ", e.PluginName, e.Plugin.(*namedPlugin).id)
		}
	}
	return s
}

func TestMultiView(t *testing.T) {
	host := &scripted{batches: [][]volume.ProbeEvent{
		{add("a", "host-a")},
		{},
		{add("b", "host-b")},
		{remove("b")},
		{},
	}}
	pods := &scripted{batches: [][]volume.ProbeEvent{
		{add("p", "pod-p")},
		{add("b", "pod-b")},
		{},
		{},
		{remove("b"), remove("p")},
	}}
	steps := []struct{ name, want string }{
		{"both sources add", "+a=host-a +p=pod-p "},
		{"pod source only: served", "+b=pod-b "},
		{"host adds the same name: host wins", "+b=host-b "},
		{"host removes it: pod's takes over", "+b=pod-b "},
		{"pod source removes both", "-b -p "},
	}
	v := NewMultiView(host, pods)
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			evs, err := v.Probe()
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(evs); got != s.want {
				t.Fatalf("events %q, want %q", got, s.want)
			}
		})
	}
}

func TestMultiViewErrorsAndSingle(t *testing.T) {
	boom := errors.New("boom")
	v := NewMultiView(&scripted{batches: [][]volume.ProbeEvent{{}}, err: boom}, &scripted{})
	if _, err := v.Probe(); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	one := &scripted{}
	if NewMultiView(one) != one {
		t.Fatal("one source is not returned as is")
	}
}
