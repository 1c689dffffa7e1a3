package flexadapter

import (
	"errors"
	"sync"

	"k8s.io/kubernetes/pkg/volume"
)

// multiView merges several DynamicPluginProbers into one, for a
// VolumePluginMgr that takes only one. When two sources have a plugin of
// the same name, the earlier source's wins; the later one's takes over
// when the earlier one removes it.
type multiView struct {
	mu      sync.Mutex
	sources []volume.DynamicPluginProber
	have    []map[string]volume.VolumePlugin // per source: its current plugins
	served  map[string]served                // what the consumer was given
}

type served struct {
	source int
	plugin volume.VolumePlugin
}

var _ volume.DynamicPluginProber = &multiView{}

// NewMultiView returns a DynamicPluginProber over sources, in priority
// order. One source is returned as it is.
func NewMultiView(sources ...volume.DynamicPluginProber) volume.DynamicPluginProber {
	if len(sources) == 1 {
		return sources[0]
	}
	m := &multiView{sources: sources, served: map[string]served{}}
	for range sources {
		m.have = append(m.have, map[string]volume.VolumePlugin{})
	}
	return m
}

// Init is part of volume.DynamicPluginProber.
func (m *multiView) Init() error {
	var errs []error
	for _, s := range m.sources {
		errs = append(errs, s.Init())
	}
	return errors.Join(errs...)
}

// Probe is part of volume.DynamicPluginProber.
func (m *multiView) Probe() ([]volume.ProbeEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	changed := map[string]bool{}
	for i, s := range m.sources {
		events, err := s.Probe()
		errs = append(errs, err)
		for _, ev := range events {
			changed[ev.PluginName] = true
			if ev.Op == volume.ProbeRemove {
				delete(m.have[i], ev.PluginName)
			} else {
				m.have[i][ev.PluginName] = ev.Plugin
			}
		}
	}
	var out []volume.ProbeEvent
	for _, name := range sortedKeys(changed) {
		if ev, ok := m.resolve(name); ok {
			out = append(out, ev)
		}
	}
	return out, errors.Join(errs...)
}

// resolve returns the event that brings the consumer's view of name in
// line with the sources, if one is needed.
func (m *multiView) resolve(name string) (volume.ProbeEvent, bool) {
	prev, had := m.served[name]
	for i := range m.sources {
		p, ok := m.have[i][name]
		if !ok {
			continue
		}
		if had && prev.source == i && prev.plugin == p {
			return volume.ProbeEvent{}, false
		}
		m.served[name] = served{source: i, plugin: p}
		return volume.ProbeEvent{Plugin: p, PluginName: name, Op: volume.ProbeAddOrUpdate}, true
	}
	if !had {
		return volume.ProbeEvent{}, false
	}
	delete(m.served, name)
	return volume.ProbeEvent{PluginName: name, Op: volume.ProbeRemove}, true
}
