package discovery

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

func TestPreferredLink(t *testing.T) {
	tests := []struct {
		name  string
		links []string
		want  string // "" for none
	}{
		{name: "wwn first", links: []string{"ata-Samsung_SSD_860_S3Z1", "wwn-0x5002538e40a1b2c3"}, want: "wwn-0x5002538e40a1b2c3"},
		{name: "eui before serial", links: []string{"nvme-Samsung_SSD_970_S4EW", "nvme-eui.0025385b71b01234"}, want: "nvme-eui.0025385b71b01234"},
		{name: "nguid before serial", links: []string{"nvme-Amazon_EBS_vol0123", "nvme-nguid.6e6d1a2b"}, want: "nvme-nguid.6e6d1a2b"},
		{name: "serial links in rank", links: []string{"virtio-a", "scsi-0QEMU_QEMU_HARDDISK_drive1", "ata-QEMU_HARDDISK_QM00002"}, want: "ata-QEMU_HARDDISK_QM00002"},
		{name: "name order within a rank", links: []string{"scsi-SATA_ST4000_ZC1", "scsi-1ATA_ST4000_ZC1", "scsi-0ATA_ST4000_ZC1"}, want: "scsi-0ATA_ST4000_ZC1"},
		{name: "a disk that gains an LVM PV keeps its link", links: []string{"lvm-pv-uuid-Wd3aYC-0b8P", "virtio-177663465177854"}, want: "virtio-177663465177854"},
		{name: "an md member keeps its link", links: []string{"md-uuid-1b4e28ba:2fa111d2", "md-name-host:0", "usb-Kingston_DT_1234-0:0"}, want: "usb-Kingston_DT_1234-0:0"},
		{name: "namespace EUI before the controller's model and serial", links: []string{"nvme-Samsung_SSD_970_S4EW", "nvme-Samsung_SSD_970_S4EW_1",
			"nvme-eui.0025385b71b01234"}, want: "nvme-eui.0025385b71b01234"},
		{name: "namespace UUID before the controller's model and serial", links: []string{"nvme-QEMU_NVMe_Ctrl_deadbeef",
			"nvme-QEMU_NVMe_Ctrl_deadbeef_2", "nvme-uuid.4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"}, want: "nvme-uuid.4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"},
		{name: "the kernel's nvme. wwid before the controller's model and serial", links: []string{"nvme-nvme_card_nvme_card",
			"nvme-nvme.1ae0-6e766d655f63617264-6e766d655f63617264-00000002", "google-local-nvme-ssd-1"},
			want: "nvme-nvme.1ae0-6e766d655f63617264-6e766d655f63617264-00000002"},
		{name: "namespace number before the controller's model and serial", links: []string{"nvme-QEMU_NVMe_Ctrl_deadbeef",
			"nvme-QEMU_NVMe_Ctrl_deadbeef_2"}, want: "nvme-QEMU_NVMe_Ctrl_deadbeef_2"},
		{name: "namespace number of a serial ending in digits", links: []string{"nvme-Model_1234567", "nvme-Model_1234567_1"},
			want: "nvme-Model_1234567_1"},
		{name: "mmc", links: []string{"mmc-SD32G_0x1234abcd"}, want: "mmc-SD32G_0x1234abcd"},
		{name: "content links only", links: []string{"md-uuid-1b4e28ba:2fa111d2", "lvm-pv-uuid-Wd3aYC", "dm-name-vg-lv", "dm-uuid-LVM-abc", "bcache-xyz", "lvm-abc"}},
		{name: "operator-chosen names", links: []string{"google-data-disk", "memstick-x"}},
		{name: "partition links", links: []string{"wwn-0x5002538e40a1b2c3-part1", "ata-Samsung_SSD_860_S3Z1-part12"}},
		{name: "none", links: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := preferredLink(tc.links)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("preferredLink = %q, %v; want %q", got, ok, tc.want)
			}
			// The choice does not depend on the order the links are listed in.
			rev := slices.Clone(tc.links)
			slices.Reverse(rev)
			if again, _ := preferredLink(rev); again != got {
				t.Errorf("reversed links give %q, want %q", again, got)
			}
		})
	}
}

func TestCapLinks(t *testing.T) {
	var links []string
	for i := range 9 {
		links = append(links, fmt.Sprintf("dm-name-%d", i))
	}
	links = append(links, "wwn-0x5000c500a1b2c3d4", "scsi-35000c500a1b2c3d4", "lvm-pv-uuid-abc")
	slices.Sort(links)
	got := capLinks(links)
	want := []string{"dm-name-0", "dm-name-1", "dm-name-2", "dm-name-3", "dm-name-4", "dm-name-5", "scsi-35000c500a1b2c3d4", "wwn-0x5000c500a1b2c3d4"}
	if !slices.Equal(got, want) {
		t.Errorf("capLinks = %v, want %v", got, want)
	}
	short := []string{"b", "a"}
	if got := capLinks(short); !slices.Equal(got, short) {
		t.Errorf("capLinks of few links = %v", got)
	}
}

// TestInventoryCapsLinks is review B2: a disk with more links than a report
// holds keeps its identity links and loses the others.
func TestInventoryCapsLinks(t *testing.T) {
	devDir, byID := recordedDev(t)
	for i := range report.MaxDiskIDs {
		mustSymlink(t, "../../sdb", byID+fmt.Sprintf("/dm-uuid-part%d-mpath-35000c500a1b2c3d4", i))
	}
	mustSymlink(t, "../../sdb", byID+"/scsi-35000c500a1b2c3d4")
	_, ctx := ktesting.NewTestContext(t)
	disks, err := (&Inventory{SysDir: recordedSys, DevDir: devDir, ByIDDir: byID}).Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if d.Name != "sdb" {
			continue
		}
		if len(d.IDs) != report.MaxDiskIDs || !slices.Contains(d.IDs, "wwn-0x5000c500a1b2c3d4") || !slices.Contains(d.IDs, "scsi-35000c500a1b2c3d4") {
			t.Errorf("sdb ids %v: want %d, its identity links among them", d.IDs, report.MaxDiskIDs)
		}
		return
	}
	t.Fatal("sdb missing from the inventory")
}
