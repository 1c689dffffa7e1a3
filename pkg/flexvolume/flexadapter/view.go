package flexadapter

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/kubernetes/pkg/volume"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

// consumerView is one consumer's volume.DynamicPluginProber.
type consumerView struct {
	src  *Source
	last atomic.Pointer[prober.Snapshot]

	mu       sync.Mutex
	plugins  map[string]uint64 // plugin name -> Entry.Version handed out
	reported map[string]string // problems already returned by Probe
}

var _ volume.DynamicPluginProber = &consumerView{}

func newConsumerView(src *Source) *consumerView {
	return &consumerView{src: src, plugins: map[string]uint64{}, reported: map[string]string{}}
}

// Init is part of volume.DynamicPluginProber. The shared Source is already
// running, and a missing plugin directory is retried in the background, so
// Init never fails (a failure would make VolumePluginMgr give up on
// dynamic discovery for the life of the process).
func (v *consumerView) Init() error { return nil }

// Probe is part of volume.DynamicPluginProber. When nothing changed since
// the last call it costs three atomic loads and returns nil, nil. Otherwise
// it returns one event per plugin added, changed or removed, and an error
// naming each problem that is new since the last call, so that
// VolumePluginMgr logs it once rather than on every lookup.
//
// While driver inits are running, Probe first waits for them, for at most
// the prober's SettleWait from their start: a lookup right after an install
// then finds the new driver instead of failing and being retried with
// backoff. Upstream's Probe runs every init itself, so it blocks for their
// whole duration.
func (v *consumerView) Probe() ([]volume.ProbeEvent, error) {
	if s := v.src.lib.Settling(); s != nil {
		s.Wait()
	}
	cur := v.src.lib.Snapshot()
	if cur == v.last.Load() {
		return nil, nil
	}
	return v.update(cur)
}

func (v *consumerView) update(cur *prober.Snapshot) ([]volume.ProbeEvent, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if cur == v.last.Load() {
		return nil, nil
	}
	// Only the changed names are sorted: a change of one driver among
	// many costs a comparison per driver, not a sort of all of them.
	var updated, removed []string
	for name, e := range cur.Entries {
		if ver, ok := v.plugins[name]; !ok || ver != e.Version {
			updated = append(updated, name)
		}
	}
	if len(v.plugins) > len(cur.Entries)-len(updated) {
		for name := range v.plugins {
			if _, ok := cur.Entries[name]; !ok {
				removed = append(removed, name)
			}
		}
	}
	slices.Sort(updated)
	slices.Sort(removed)
	var events []volume.ProbeEvent // nil when nothing changed
	for _, name := range updated {
		e := cur.Entries[name]
		v.plugins[name] = e.Version
		events = append(events, volume.ProbeEvent{
			Plugin: newPlugin(v.src, e), PluginName: name, Op: volume.ProbeAddOrUpdate,
		})
	}
	for _, name := range removed {
		delete(v.plugins, name)
		events = append(events, volume.ProbeEvent{PluginName: name, Op: volume.ProbeRemove})
	}
	err := v.newProblems(cur.Problems)
	v.last.Store(cur)
	return events, err
}

// newProblems returns the problems not returned before, joined.
func (v *consumerView) newProblems(probs map[string]string) error {
	var errs []error
	for _, k := range sortedKeys(probs) {
		if v.reported[k] != probs[k] {
			errs = append(errs, fmt.Errorf("%s", probs[k]))
		}
	}
	clear(v.reported)
	for k, msg := range probs {
		v.reported[k] = msg
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
