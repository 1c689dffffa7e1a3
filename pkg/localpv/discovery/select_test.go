package discovery

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/nodeplug/nodeplug/pkg/localpv/config"
	"github.com/nodeplug/nodeplug/pkg/localpv/identity"
	"github.com/nodeplug/nodeplug/pkg/localpv/report"
	"github.com/nodeplug/nodeplug/pkg/localpv/testutil"
	utiltestutil "github.com/nodeplug/nodeplug/pkg/util/testutil"
)

func TestSelectDisks(t *testing.T) {
	testutil.RequireRoot(t)
	images, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	disks, err := (&Inventory{SysDir: recordedSys, DevDir: images, ByIDDir: byID, Probe: true}).Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes, links := deviceNodes(t, disks)
	s := &Scanner{DevDir: nodes, SysDir: recordedSys}
	type class struct {
		pattern  string
		selector config.DiskSelector
	}
	tests := []struct {
		name    string
		classes []class
		want    [][]string // per class: "link=disk" or "link:reason"
	}{
		{name: "non-rotational", classes: []class{{selector: config.DiskSelector{Rotational: ptr.To(false)}}},
			want: [][]string{{"nvme-eui.0025385b71b01234=nvme0n1", "nvme-eui.002538b981b05678=nvme1n1", "wwn-0x5002538e40a1b2c3=sda"}}},
		{name: "by model", classes: []class{{selector: config.DiskSelector{Models: []string{"ST4000*"}}}},
			want: [][]string{{"wwn-0x5000c500a1b2c3d4=sdb"}}},
		{name: "name pattern limits links", classes: []class{{pattern: "ata-*,virtio-*", selector: config.DiskSelector{}}},
			want: [][]string{{"ata-Samsung_SSD_860_EVO_500GB_S3Z1NB0K123456A=sda", "virtio-177663465177854=vda"}}},
		{name: "a device-mapper device is no disk", classes: []class{{pattern: "dm-*", selector: config.DiskSelector{}}},
			want: [][]string{nil}},
		{name: "first class keeps a disk both select",
			classes: []class{{selector: config.DiskSelector{Models: []string{"Samsung*"}}}, {selector: config.DiskSelector{Rotational: ptr.To(false)}}},
			want: [][]string{
				{"nvme-eui.0025385b71b01234=nvme0n1", "nvme-eui.002538b981b05678=nvme1n1", "wwn-0x5002538e40a1b2c3=sda"},
				{"nvme-eui.0025385b71b01234:" + SkipSelectedByOtherClass, "nvme-eui.002538b981b05678:" + SkipSelectedByOtherClass,
					"wwn-0x5002538e40a1b2c3:" + SkipSelectedByOtherClass}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claimed := map[string]string{}
			for i, c := range tc.classes {
				spec := ClassSpec{Name: string(rune('a' + i)), MountDir: links, NamePattern: c.pattern, Devices: true, DiskSelector: &c.selector}
				if spec.NamePattern == "" {
					spec.NamePattern = "*"
				}
				entries, err := s.SelectDisks(ctx, spec, disks, claimed)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, e := range entries {
					if e.Skip != "" {
						got = append(got, e.Name+":"+e.Skip)
					} else {
						got = append(got, e.Name+"="+e.Disk.Name)
					}
				}
				if diff := cmp.Diff(tc.want[i], got); diff != "" {
					t.Errorf("class %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
	if _, err := s.SelectDisks(ctx, ClassSpec{MountDir: filepath.Join(links, "none"), DiskSelector: &config.DiskSelector{}}, disks, nil); err == nil {
		t.Error("an unreadable link directory must fail")
	}
}

func TestSelectDisksVolumeProperties(t *testing.T) {
	testutil.RequireRoot(t)
	images, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	disks, _ := (&Inventory{SysDir: recordedSys, DevDir: images, ByIDDir: byID, Probe: true}).Disks(ctx)
	nodes, links := deviceNodes(t, disks)
	spec := ClassSpec{Name: "hdd", MountDir: links, NamePattern: "*", Devices: true,
		DiskSelector: &config.DiskSelector{Rotational: ptr.To(true), MinSize: nil}}
	entries, err := (&Scanner{DevDir: nodes, SysDir: recordedSys}).SelectDisks(ctx, spec, disks, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	// sdc has no link, so it is not a candidate; sdb keeps its ext4 for the
	// master to judge.
	want := []Entry{
		{Name: "virtio-177663465177854", Kind: report.KindBlock, Capacity: 536870912 * 512, Disk: &report.Disk{Name: "vda",
			Size: 536870912 * 512, Rotational: true, Vendor: "0x1af4", Serial: "177663465177854", Signature: report.SignatureNone},
			ID: identity.Serial("", "177663465177854", 536870912*512), Dev: "vda"},
		{Name: "wwn-0x5000c500a1b2c3d4", Kind: report.KindBlock, Capacity: 7814037168 * 512, Disk: &report.Disk{Name: "sdb",
			Size: 7814037168 * 512, Rotational: true, Model: "ST4000NM0035-1V4", Vendor: "ATA", Serial: "ZC1ABCDE",
			WWN: "naa.5000c500a1b2c3d4", Signature: "ext4"}, ID: identity.WWNSerial("naa.5000c500a1b2c3d4", "ZC1ABCDE"), Dev: "sdb"},
	}
	if diff := cmp.Diff(want, entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestSelectDisksIdentityLinks is review A3: a disk is published under an
// identity link only, so that a tenant's pvcreate does not move it.
func TestSelectDisksIdentityLinks(t *testing.T) {
	testutil.RequireRoot(t)
	images, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	disks, err := (&Inventory{SysDir: recordedSys, DevDir: images, ByIDDir: byID}).Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes, links := deviceNodes(t, disks)
	spec := ClassSpec{Name: "hdd", MountDir: links, NamePattern: "*", Devices: true,
		DiskSelector: &config.DiskSelector{Rotational: ptr.To(true)}}
	s := &Scanner{DevDir: nodes, SysDir: recordedSys}
	published := func() []string {
		t.Helper()
		entries, err := s.SelectDisks(ctx, spec, disks, map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name+":"+e.Skip)
		}
		return got
	}
	before := published()
	// The tenant of vda's PV runs pvcreate: udev adds a link that sorts
	// before virtio-. sdc is assembled into an array: its only link is
	// named after the array.
	mustSymlink(t, filepath.Join(nodes, "vda"), filepath.Join(links, "lvm-pv-uuid-Wd3aYC-0b8P-QxRk"))
	mustSymlink(t, filepath.Join(nodes, "sdc"), filepath.Join(links, "md-uuid-1b4e28ba:2fa111d2:883f0016:d3cca427"))
	want := []string{"md-uuid-1b4e28ba:2fa111d2:883f0016:d3cca427:" + SkipNoIdentityLink, "virtio-177663465177854:", "wwn-0x5000c500a1b2c3d4:"}
	if diff := cmp.Diff(want, published()); diff != "" {
		t.Errorf("after new links (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[1:], before); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
}

// deviceNodes makes a block device node for every disk, and a directory of
// udev-like links to them named as recordedDev names its links.
func deviceNodes(t *testing.T, disks []report.Disk) (nodes, links string) {
	t.Helper()
	nodes, links = t.TempDir(), t.TempDir()
	for i, d := range disks {
		if err := unix.Mknod(filepath.Join(nodes, d.Name), unix.S_IFBLK|0o600, int(unix.Mkdev(7, uint32(4000+i)))); err != nil {
			utiltestutil.MissingCapability(t, "cannot make device nodes: %v", err)
		}
		for _, id := range d.IDs {
			mustSymlink(t, filepath.Join(nodes, d.Name), filepath.Join(links, id))
		}
	}
	// A partition link resolves to no whole disk and is ignored.
	if err := os.WriteFile(filepath.Join(nodes, "sda1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, filepath.Join(nodes, "sda1"), filepath.Join(links, "wwn-0x5002538e40a1b2c3-part1"))
	return nodes, links
}
