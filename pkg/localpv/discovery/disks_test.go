package discovery

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// recordedSys is a sysfs tree written from the layout of real disks: an
// NVMe SSD, an NVMe SSD with a partition, SATA SSD and HDDs behind libata,
// virtio disks, and a detached loop device.
const recordedSys = "testdata/sys"

func TestInventoryDisks(t *testing.T) {
	devDir, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	got, err := (&Inventory{SysDir: recordedSys, DevDir: devDir, ByIDDir: byID, Probe: true}).Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []report.Disk{
		{Name: "dm-0", Size: 209707008 * 512, Rotational: true, IDs: []string{"dm-uuid-LVM-abc123"}, Stacked: true},
		{Name: "loop1", Size: 64 << 20, Rotational: true}, // not probed: no class asks for loop devices
		{Name: "nvme0n1", Size: 1953525168 * 512, Model: "Samsung SSD 970 EVO Plus 1TB", Serial: "S4EWNX0N123456",
			WWN: "eui.0025385b71b01234", IDs: []string{"nvme-Samsung_SSD_970_EVO_Plus_1TB_S4EWNX0N123456", "nvme-eui.0025385b71b01234"},
			Signature: report.SignatureNone},
		{Name: "nvme1n1", Size: 3907029168 * 512, Model: "Samsung SSD 980 PRO 2TB", Serial: "S6B0NL0T654321",
			WWN: "eui.002538b981b05678", IDs: []string{"nvme-eui.002538b981b05678"}, Partitions: 1}, // not probed: partitions
		{Name: "sda", Size: 976773168 * 512, Model: "Samsung SSD 860", Vendor: "ATA", Serial: "S3Z1NB0K123456A",
			WWN: "naa.5002538e40a1b2c3", IDs: []string{"ata-Samsung_SSD_860_EVO_500GB_S3Z1NB0K123456A", "wwn-0x5002538e40a1b2c3"},
			Signature: report.SignatureNone},
		{Name: "sdb", Size: 7814037168 * 512, Rotational: true, Model: "ST4000NM0035-1V4", Vendor: "ATA", Serial: "ZC1ABCDE",
			WWN: "naa.5000c500a1b2c3d4", IDs: []string{"wwn-0x5000c500a1b2c3d4"}, Signature: "ext4"},
		{Name: "sdc", Size: 3907029168 * 512, Rotational: true, Model: "WDC WD20EZRZ-00Z", Vendor: "ATA",
			Serial: "WD-WCC4M1234567", Signature: report.SignatureUnknown},
		{Name: "sr0", Size: 1 << 30, Rotational: true, Removable: true, Model: "QEMU DVD-ROM", Vendor: "QEMU"}, // not probed
		{Name: "vda", Size: 536870912 * 512, Rotational: true, Vendor: "0x1af4", Serial: "177663465177854",
			IDs: []string{"virtio-177663465177854"}, Signature: report.SignatureNone},
		{Name: "vdb", Size: 209715200 * 512, Rotational: true, Vendor: "0x1af4", Serial: "data-disk-2", Holders: 1}, // not probed: a holder
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
}

func TestInventoryMissingSysfs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	if _, err := (&Inventory{SysDir: t.TempDir()}).Disks(ctx); err == nil {
		t.Fatal("a sysfs root without block/ must fail")
	}
}

// recordedDev writes the device nodes of the recorded disks as images with
// their first sectors, and udev's by-id links to them. sdc has no image:
// its probe fails.
func recordedDev(t *testing.T) (devDir, byID string) {
	t.Helper()
	devDir = t.TempDir()
	byID = filepath.Join(devDir, "disk", "by-id")
	if err := os.MkdirAll(byID, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, sig := range map[string][2]any{
		"nvme0n1": {0, ""}, "nvme1n1": {512, "EFI PART"}, "sda": {4095, "\x00"},
		"sdb": {1080, "\x53\xef"}, "vda": {0, ""}, "vdb": {512, "LABELONE"}, "dm-0": {0, ""},
	} {
		writeAt(t, filepath.Join(devDir, name), sig[0].(int), sig[1].(string))
	}
	for link, dev := range map[string]string{
		"nvme-Samsung_SSD_970_EVO_Plus_1TB_S4EWNX0N123456": "nvme0n1",
		"nvme-eui.0025385b71b01234":                        "nvme0n1",
		"nvme-eui.002538b981b05678":                        "nvme1n1",
		"ata-Samsung_SSD_860_EVO_500GB_S3Z1NB0K123456A":    "sda",
		"wwn-0x5002538e40a1b2c3":                           "sda",
		"wwn-0x5000c500a1b2c3d4":                           "sdb",
		"virtio-177663465177854":                           "vda",
		"dangling":                                         "sdz",
		"dm-uuid-LVM-abc123":                               "dm-0",
	} {
		mustSymlink(t, "../../"+dev, filepath.Join(byID, link))
	}
	return devDir, byID
}

func writeAt(t *testing.T, path string, offset int, data string) {
	t.Helper()
	b := make([]byte, offset+len(data))
	copy(b[offset:], data)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
