package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
)

// inventoryReport is a report with n disks whose serials and WWNs are
// random, as real ones are to a compressor, each with two by-id links, and
// one selector class publishing all of them, each volume with its identity
// and kernel name.
func inventoryReport(n int) *Report {
	rng := rand.New(rand.NewPCG(1, 2))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := &Report{Version: Version, Node: "node-1", DisksTotal: n}
	c := Class{Name: "ssd"}
	for i := range n {
		var serial strings.Builder
		for range 14 {
			serial.WriteByte(alnum[rng.IntN(len(alnum))])
		}
		wwn := fmt.Sprintf("naa.5%015x", rng.Uint64()>>4)
		d := Disk{Name: fmt.Sprintf("sd%c%c", 'a'+i/26, 'a'+i%26), Size: rng.Int64N(16 << 40), Rotational: i%2 == 0,
			Model: "Samsung SSD 870 EVO 4TB", Vendor: "ATA", Serial: serial.String(), WWN: wwn, Signature: SignatureNone,
			IDs: []string{"ata-Samsung_SSD_870_EVO_4TB_" + serial.String(), "wwn-0x" + wwn[4:]}}
		r.Disks = append(r.Disks, d)
		props := d
		props.IDs = nil
		c.Volumes = append(c.Volumes, Volume{Name: d.IDs[1], Kind: KindBlock, Capacity: d.Size, Disk: &props,
			ID: identity.WWN(wwn), Dev: d.Name})
	}
	r.Classes = []Class{c}
	return r
}

// TestInventoryBudget records how many selected disks, with the inventory,
// fit in the termination messages.
func TestInventoryBudget(t *testing.T) {
	tests := []struct {
		disks, shards int
	}{
		{disks: 43, shards: 1},
		{disks: 64, shards: 2},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.disks), func(t *testing.T) {
			r := inventoryReport(tc.disks)
			msgs, err := encode(r, tc.shards)
			if err != nil {
				t.Fatalf("%d disks do not fit in %d shards: %v", tc.disks, tc.shards, err)
			}
			back, err := Decode(msgs)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Disks) != tc.disks || back.Classes[0].Volumes[0].Disk.Serial != r.Disks[0].Serial {
				t.Errorf("round trip lost disks: %d", len(back.Disks))
			}
		})
	}
}

func TestDecodeRejectsBadDisks(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Report)
		want   string
	}{
		{name: "too many disks", mutate: func(r *Report) { r.Disks = inventoryReport(MaxDisks + 1).Disks }, want: "disks exceed"},
		{name: "empty name", mutate: func(r *Report) { r.Disks[0].Name = "" }, want: "disk name is empty"},
		{name: "negative size", mutate: func(r *Report) { r.Classes[0].Volumes[0].Disk.Size = -1 }, want: "negative size"},
		{name: "a block entry's use without a name", mutate: func(r *Report) { r.Classes[0].Volumes[0].Use = &Disk{} }, want: "disk name is empty"},
		{name: "a bad whole-disk name", mutate: func(r *Report) { r.Classes[0].Volumes[0].Whole = "../sdb" }, want: "bad device name"},
		{name: "a negative count of omitted held paths", mutate: func(r *Report) { r.HeldOmitted = -1 }, want: "negative count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := inventoryReport(2)
			tc.mutate(r)
			msgs, err := Encode(r, MaxShards)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(msgs); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDecodeDropsExtraIDs(t *testing.T) {
	r := inventoryReport(2)
	for i := range MaxDiskIDs + 3 {
		r.Disks[0].IDs = append(r.Disks[0].IDs, fmt.Sprintf("scsi-%d", i))
	}
	r.Classes[0].Volumes[1].Disk.IDs = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	want := slices.Clone(r.Disks[0].IDs[:MaxDiskIDs])
	msgs, err := Encode(r, MaxShards)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(msgs)
	if err != nil {
		t.Fatalf("a disk with %d ids made the report undecodable: %v", len(r.Disks[0].IDs), err)
	}
	if !slices.Equal(back.Disks[0].IDs, want) || len(back.Classes[0].Volumes[1].Disk.IDs) != MaxDiskIDs {
		t.Errorf("ids = %v and %v, want the first %d", back.Disks[0].IDs, back.Classes[0].Volumes[1].Disk.IDs, MaxDiskIDs)
	}
	if !slices.Equal(back.Disks[1].IDs, r.Disks[1].IDs) {
		t.Errorf("ids of another disk changed: %v", back.Disks[1].IDs)
	}
}

func TestEncodeDropsInventoryFirst(t *testing.T) {
	r := inventoryReport(MaxDisks)
	r.Classes[0].Volumes = nil
	for i := range 300 {
		r.Classes[0].Volumes = append(r.Classes[0].Volumes, Volume{Name: fmt.Sprintf("vol-%04d", i), Kind: KindDirectory, Capacity: 1})
	}
	msgs, err := Encode(r, 1)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if back.Disks != nil || back.DisksTotal != MaxDisks || len(back.Classes[0].Volumes) != 300 {
		t.Errorf("got %d disks of %d and %d volumes", len(back.Disks), back.DisksTotal, len(back.Classes[0].Volumes))
	}
}

// TestAllHeldStandsForTheOmitted (N3 c): held paths beyond MaxHeld are
// one unresolved entry for the master, never nothing.
func TestAllHeldStandsForTheOmitted(t *testing.T) {
	held := []Held{{Path: "/a", ID: "fh:1.00"}}
	if got := (&Report{Held: held}).AllHeld(); len(got) != 1 {
		t.Errorf("AllHeld without omitted paths = %+v", got)
	}
	got := (&Report{Held: held, HeldOmitted: 2}).AllHeld()
	if len(got) != 2 || got[0] != held[0] || got[1].Error != ErrHeldOmitted || got[1].Path != "2 more local PVs" {
		t.Errorf("AllHeld = %+v, want the held path and one unresolved entry for 2 more", got)
	}
}
