package cache

import (
	"maps"
	"slices"
	"testing"
)

const csiPlugin = "CSIPlugin"

// TestRegisteredByTypeIsMaintained: the per-type counts follow every Put,
// Update and Delete, including a Put that replaces a registered Instance.
func TestRegisteredByTypeIsMaintained(t *testing.T) {
	a := newActualState()
	csi := func(path, name string, reg bool) Instance {
		return Instance{Path: path, Key: PluginKey{Type: csiPlugin, Name: name}, Registered: reg}
	}
	steps := []struct {
		name string
		do   func()
		want map[string]int
	}{
		{"put unregistered", func() { a.Put(csi("/a", "x", false)) }, map[string]int{}},
		{"register by update", func() { a.Update("/a", func(i *Instance) { i.Registered = true }) }, map[string]int{csiPlugin: 1}},
		{"second plugin", func() { a.Put(csi("/b", "y", true)) }, map[string]int{csiPlugin: 2}},
		{"replace registered path", func() { a.Put(csi("/b", "y", false)) }, map[string]int{csiPlugin: 1}},
		{"delete registered", func() { a.Delete("/a") }, map[string]int{}},
		{"delete unknown", func() { a.Delete("/nope") }, map[string]int{}},
	}
	for _, s := range steps {
		s.do()
		if got := a.RegisteredByType(); !maps.Equal(got, s.want) {
			t.Fatalf("%s: RegisteredByType() = %v, want %v", s.name, got, s.want)
		}
	}
}

// TestRegisteredOfKey: Registered returns every registered instance of one
// key (several under Policy.AllInstances) and none of other keys.
func TestRegisteredOfKey(t *testing.T) {
	a := newActualState()
	dra := PluginKey{Type: "DRAPlugin", Name: "gpu.example.com"}
	a.Put(Instance{Path: "/a", Key: dra, Registered: true})
	a.Put(Instance{Path: "/b", Key: dra, Registered: true})
	a.Put(Instance{Path: "/c", Key: dra})
	a.Put(Instance{Path: "/d", Key: PluginKey{Type: "DRAPlugin", Name: "other"}, Registered: true})
	var paths []string
	for _, i := range a.Registered(dra) {
		paths = append(paths, i.Path)
	}
	slices.Sort(paths)
	if want := []string{"/a", "/b"}; !slices.Equal(paths, want) {
		t.Errorf("Registered(%v) = %q, want %q", dra, paths, want)
	}
}
