package unwiped_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeplug/localpv-api/localpv/v1alpha1"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped"
	"github.com/nodeplug/nodeplug/pkg/localpv/unwiped/unwipedtest"
)

// stores builds the memory over objs both ways a master may read it: the
// apiserver on every read, and an informer's cache.
func stores(t *testing.T, objs ...runtime.Object) map[string]unwiped.Store {
	t.Helper()
	clk := testingclock.NewFakeClock(start)
	return map[string]unwiped.Store{
		"listed": unwipedtest.Store(unwipedtest.Client(objs...), fake.NewClientset(), "lpv", clk),
		"cached": unwipedtest.CachedStore(t, unwipedtest.Client(objs...), fake.NewClientset(), "lpv", clk, false),
	}
}

// TestCandidates: the entries a disk found may be are its key's and those
// of the legacy forms it refines (a strong one on any node, a weak one on
// its node and path), found without reading the rest of the memory; both
// ways of reading give the same.
func TestCandidates(t *testing.T) {
	const u = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	handle := []byte{12, 0, 0, 0, 7, 0, 0, 0}
	exact := unwiped.Disk{ID: identity.LocalFileHandle(0, 52, 1, handle), PV: "a", Node: "n1", Path: "/mnt/fast/a"}
	wwnAlone := unwiped.Disk{ID: identity.WWN("naa.600a"), PV: "b", Node: "n2", Path: "/mnt/blk/b"}
	bareHandle := unwiped.Disk{ID: identity.FileHandle(1, handle), PV: "c", Node: "n1", Path: "/mnt/fast/c"}
	other := unwiped.Disk{ID: identity.WWN("naa.600b"), PV: "d", Node: "n1", Path: "/mnt/blk/d"}
	var objs []runtime.Object
	for _, d := range []unwiped.Disk{exact, wwnAlone, bareHandle, other} {
		objs = append(objs, unwipedtest.Object(d))
	}
	key := func(d unwiped.Disk) string { return unwiped.Key(d.Node, d.Path, d.ID) }
	tests := []struct {
		name, node, path string
		id               identity.ID
		want             []string
	}{
		{name: "its own key", node: "n1", path: "/mnt/fast/a", id: exact.ID, want: []string{key(exact)}},
		{name: "a strong legacy form on another node", node: "n1", path: "/mnt/blk/x", id: identity.WWNSerial("naa.600a", "SN1"),
			want: []string{key(wwnAlone)}},
		{name: "a weak legacy form at its node and path", node: "n1", path: "/mnt/fast/c", id: identity.FS(u, 1, handle),
			want: []string{key(bareHandle)}},
		{name: "a weak legacy form at another path", node: "n1", path: "/mnt/fast/z", id: identity.FS(u, 1, handle)},
		{name: "a weak legacy form on another node", node: "n2", path: "/mnt/fast/c", id: identity.FS(u, 1, handle)},
		{name: "nothing remembered", node: "n1", path: "/mnt/blk/y", id: identity.WWN("naa.600c")},
	}
	for mode, s := range stores(t, objs...) {
		for _, tc := range tests {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				got, err := s.Candidates(t.Context(), tc.node, tc.path, tc.id)
				if err != nil {
					t.Fatal(err)
				}
				if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, tc.want) {
					t.Errorf("candidates %v, want %v", keys, tc.want)
				}
			})
		}
	}
}

// TestCachedStoreSeesItsOwnWrites: a disk the master remembers is found at
// once, before the cache's watch shows it, and no longer once forgotten:
// a report handled right after the PV was dropped holds the disk.
func TestCachedStoreSeesItsOwnWrites(t *testing.T) {
	s := unwipedtest.CachedStore(t, unwipedtest.Client(), fake.NewClientset(), "lpv", testingclock.NewFakeClock(start), true)
	pv := releasedPV("a", "n1", identity.WWN("naa.1"), true)
	if err := s.Remember(t.Context(), pv, "test"); err != nil {
		t.Fatal(err)
	}
	key := unwiped.Key("n1", "", diskID(pv))
	got, err := s.Candidates(t.Context(), "n2", "/mnt/blk/sdb", diskID(pv))
	if _, ok := got[key]; err != nil || !ok {
		t.Fatalf("candidates %v (%v) right after Remember, want %s", got, err, key)
	}
	if err := s.Forget(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Candidates(t.Context(), "n2", "/mnt/blk/sdb", diskID(pv)); err != nil || len(got) != 0 {
		t.Errorf("candidates %v (%v) after Forget, want none", got, err)
	}
}

// TestCachedStoreFailsClosed: a cached memory that holds an entry that does
// not parse, or whose API is no longer served, is an error for the gate,
// for the lookups and for Remember, as a listed one is.
func TestCachedStoreFailsClosed(t *testing.T) {
	bad := object(t, entry("disk-00000000000000000000", "wwn:naa.2", "n1", ""))
	good := releasedPV("a", "n1", identity.WWN("naa.1"), true)
	tests := []struct {
		name     string
		objs     []runtime.Object
		notFound bool
		wantErr  error
	}{
		{name: "an entry under another disk's key", objs: []runtime.Object{bad}},
		{name: "API no longer served", notFound: true, wantErr: unwiped.ErrMissing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dyn := unwipedtest.Client(tc.objs...)
			s := unwipedtest.CachedStore(t, dyn, fake.NewClientset(), "lpv", testingclock.NewFakeClock(start), false)
			if tc.notFound {
				dyn.PrependReactor("*", v1alpha1.UnwipedDiskResource, func(core.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewNotFound(v1alpha1.UnwipedDiskGroupVersionResource.GroupResource(), "")
				})
			}
			if err := s.Check(t.Context()); err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("Check: %v, want an error (%v)", err, tc.wantErr)
			}
			if tc.notFound {
				return // the cache still holds what it read; the gate stops every sync
			}
			if _, err := s.Candidates(t.Context(), "n1", "/p", identity.WWN("naa.3")); err == nil {
				t.Error("Candidates read a broken memory")
			}
			if err := s.Remember(t.Context(), good, "test"); err == nil {
				t.Error("Remember wrote to a broken memory")
			}
		})
	}
}
