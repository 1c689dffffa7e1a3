package flexadapter

import (
	"slices"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/flexvolume/prober"
)

func snap(entries ...*prober.Entry) *prober.Snapshot {
	m := map[string]*prober.Entry{}
	for _, e := range entries {
		m[e.Name] = e
	}
	return &prober.Snapshot{Entries: m}
}

func TestNewlyReady(t *testing.T) {
	a1 := &prober.Entry{Name: "a", State: prober.StateReady, Version: 1}
	a2 := &prober.Entry{Name: "a", State: prober.StateReady, Version: 2}
	aFailed := &prober.Entry{Name: "a", State: prober.StateInitFailed, Version: 3}
	b := &prober.Entry{Name: "b", State: prober.StateReady, Version: 4}
	bRemoving := &prober.Entry{Name: "b", State: prober.StateRemoving, Version: 5}
	cases := map[string]struct {
		prev, cur *prober.Snapshot
		want      []string
	}{
		"new driver":             {snap(), snap(a1), []string{"a"}},
		"unchanged":              {snap(a1), snap(a1), nil},
		"new version":            {snap(a1), snap(a2), []string{"a"}},
		"failed init is not":     {snap(a1), snap(aFailed), nil},
		"recovered from failure": {snap(aFailed), snap(a2), []string{"a"}},
		"removing is not":        {snap(b), snap(bRemoving), nil},
		"two at once, sorted":    {snap(), snap(b, a1), []string{"a", "b"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := newlyReady(tc.prev, tc.cur); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
