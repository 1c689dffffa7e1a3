package report

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// fsIdentity is the identity of a directory volume that is the root of its
// own file system, as a mount point per disk is: a random UUID and the root
// directory's file handle (ext4: inode 2, generation 0).
func fsIdentity(rng *rand.Rand) identity.ID {
	return identity.FS(uuidName(rng), 1, []byte{2, 0, 0, 0, 0, 0, 0, 0})
}

// directoryReport is a report of n directory volumes named by name, each
// the root of its own file system.
func directoryReport(n int, name func(i int) string) *Report {
	rng := rand.New(rand.NewPCG(5, 6))
	r := makeReport(n, name)
	for i := range r.Classes[0].Volumes {
		r.Classes[0].Volumes[i].ID = fsIdentity(rng)
	}
	return r
}

// bindMountReport is a report of n directory volumes named by name, all
// bind mounts of directories of one file system: one UUID, and file
// handles of sequential inodes with random generations.
func bindMountReport(n int, name func(i int) string) *Report {
	rng := rand.New(rand.NewPCG(9, 10))
	uuid := uuidName(rng)
	r := makeReport(n, name)
	for i := range r.Classes[0].Volumes {
		h := binary.LittleEndian.AppendUint32(nil, uint32(131073+i))
		r.Classes[0].Volumes[i].ID = identity.FS(uuid, 1, binary.LittleEndian.AppendUint32(h, rng.Uint32()))
	}
	return r
}

// fits reports whether a report fits in shards messages without losing
// anything.
func fits(r *Report, shards int) bool {
	_, err := encode(r, shards)
	return err == nil
}

// capacity returns the largest n in [0, limit] for which mk(n) fits.
func capacity(shards, limit int, mk func(n int) *Report) int {
	lo, hi := 0, limit
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mk(mid), shards) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// TestCapacity measures what a node's report can hold, and holds the
// figures that pkg/localpv/README.md states to them:
//
//	go test ./pkg/localpv/report -run TestCapacity -v
func TestCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	uuidNames := func(n int) *Report { return directoryReport(n, func(int) string { return uuidName(rng) }) }
	seqNames := func(n int) *Report {
		return directoryReport(n, func(i int) string { return fmt.Sprintf("disk-%04d", i) })
	}
	binds := func(n int) *Report {
		return bindMountReport(n, func(i int) string { return fmt.Sprintf("vol-%04d", i) })
	}
	withHeld := func(n int) *Report {
		r := uuidNames(n)
		hrng := rand.New(rand.NewPCG(11, 12))
		for range MaxHeld {
			r.Held = append(r.Held, Held{Path: "/mnt/other-disks/pvc-" + uuidName(hrng), ID: fsIdentity(hrng)})
		}
		return r
	}
	inventoryOnly := func(n int) *Report { r := inventoryReport(n); r.Classes[0].Volumes = nil; return r }
	tests := []struct {
		name    string
		shards  int
		mk      func(int) *Report
		atLeast int
	}{
		{name: "inventory alone", shards: 1, mk: inventoryOnly, atLeast: 62},
		{name: "selected disks with the inventory", shards: 1, mk: inventoryReport, atLeast: 43},
		{name: "selected disks with the inventory", shards: 2, mk: inventoryReport, atLeast: 91},
		{name: "UUID-named directories, one file system each", shards: 1, mk: uuidNames, atLeast: 65},
		{name: "UUID-named directories, one file system each", shards: 3, mk: uuidNames, atLeast: 200},
		{name: "sequentially named directories, one file system each", shards: 1, mk: seqNames, atLeast: 115},
		{name: "sequentially named directories, one file system each", shards: 3, mk: seqNames, atLeast: 360},
		{name: "UUID-named directories with 64 held paths", shards: 3, mk: withHeld, atLeast: 140},
		{name: "sequentially named bind mounts of one file system", shards: 1, mk: binds, atLeast: 240},
		{name: "sequentially named bind mounts of one file system", shards: 3, mk: binds, atLeast: 750},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s in %d", tc.name, tc.shards), func(t *testing.T) {
			n := capacity(tc.shards, 1000, tc.mk)
			t.Logf("%s: %d fit in %d shard(s)", tc.name, n, tc.shards)
			if n < tc.atLeast {
				t.Errorf("%d fit, the README states %d", n, tc.atLeast)
			}
		})
	}
}
