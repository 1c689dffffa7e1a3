package identity

import (
	"os"
	"path/filepath"
	"testing"
)

// writeTree writes files (path → content) below root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, v := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadAttributes(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"nvme0n1/size": "2048\n", "nvme0n1/wwid": "eui.0025388b91b3c0a1\n", "nvme0n1/device/model": "Samsung SSD\n",
		"nvme0n1/device/serial": "S4EWNX0N\n",
		"sdb/size":              "4096\n", "sdb/device/wwid": "t10.ATA     QEMU HARDDISK\n", "sdb/device/model": "QEMU HARDDISK\n",
		"sdb/device/vpd_pg80": "\x00\x80\x00\x08QM00002 ",
		"vda/size":            "100\n",
	})
	for _, tc := range []struct {
		name string
		want ID
	}{
		{"nvme0n1", WWN("eui.0025388b91b3c0a1")},
		{"sdb", Serial("QEMU HARDDISK", "QM00002", 4096*512)},
		{"vda", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadAttributes(filepath.Join(root, tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if got := Disk(a.WWN, a.Model, a.Serial, a.Size); got != tc.want {
				t.Errorf("identity %q, want %q (%+v)", got, tc.want, a)
			}
		})
	}
	if _, err := ReadAttributes(filepath.Join(root, "missing")); err == nil {
		t.Error("a device without a size has attributes")
	}
}

func TestPartition(t *testing.T) {
	if got := Partition("", 1, 2); got != "" {
		t.Errorf("partition of an unknown disk = %q, want unknown", got)
	}
	p := Partition(WWN("naa.1"), 1<<20, 1<<30)
	if !p.Strong() || p.Kind() != KindPartition || Partition(Loop("/a", 0, 0), 1, 2).Strong() {
		t.Errorf("partition identity %q", p)
	}
	if err := p.Valid(); err != nil {
		t.Error(err)
	}
}
