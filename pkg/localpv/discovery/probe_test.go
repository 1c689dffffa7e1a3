package discovery

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// recordingOpener opens images like OpenDevice, and records which device
// was opened and how; exclusive opens of the devices in busy fail with
// EBUSY, as those of a mounted disk do.
type recordingOpener struct {
	mu     sync.Mutex
	opened []string
	busy   map[string]bool
}

func (o *recordingOpener) open(path string, exclusive bool) (Device, error) {
	name := filepath.Base(path)
	o.mu.Lock()
	if exclusive {
		o.opened = append(o.opened, name)
	}
	o.mu.Unlock()
	if exclusive && o.busy[name] {
		return nil, &os.PathError{Op: "open", Path: path, Err: unix.EBUSY}
	}
	return OpenDevice(path, false)
}

func TestInventoryProbesOnlySelectableDisks(t *testing.T) {
	devDir, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	// nvme1n1 has partitions and vdb a holder (LVM): never read (H2).
	disks := []string{"nvme0n1", "sda", "sdb", "sdc", "vda"}
	tests := []struct {
		name       string
		probe      bool
		loop       bool
		wantOpened []string
	}{
		{name: "no class has a selector", probe: false},
		{name: "disks, not dm, optical, loop, or disks with partitions or holders", probe: true, wantOpened: disks},
		{name: "loop devices asked for", probe: true, loop: true, wantOpened: append([]string{"loop1"}, disks...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := &recordingOpener{}
			inv := &Inventory{SysDir: recordedSys, DevDir: devDir, ByIDDir: byID, Probe: tc.probe, LoopDevices: tc.loop, Open: o.open}
			got, err := inv.Disks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(o.opened)
			if !slices.Equal(o.opened, tc.wantOpened) {
				t.Errorf("probed %v, want %v", o.opened, tc.wantOpened)
			}
			for _, d := range got {
				if probed := slices.Contains(tc.wantOpened, d.Name); probed != (d.Signature != "") {
					t.Errorf("disk %s: signature %q, probed %v", d.Name, d.Signature, probed)
				}
			}
		})
	}
}

// TestInventoryDoesNotReadDisksWithHoldersOrPartitions (H2): a disk with
// partitions or a stacked holder (a multipath or LVM member) is never
// chosen, so it is never opened: a read behind a blocked multipath path
// would hang the discovery container.
func TestInventoryDoesNotReadDisksWithHoldersOrPartitions(t *testing.T) {
	devDir, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	o := &recordingOpener{}
	inv := &Inventory{SysDir: recordedSys, DevDir: devDir, ByIDDir: byID, Probe: true, Open: o.open}
	disks, err := inv.Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range disks {
		if (d.Partitions > 0 || d.Holders > 0) && slices.Contains(o.opened, d.Name) {
			t.Errorf("disk %s (%d partitions, %d holders) was opened", d.Name, d.Partitions, d.Holders)
		}
	}
	if !slices.Contains(o.opened, "nvme0n1") {
		t.Errorf("opened %v: an unused disk was not probed", o.opened)
	}
}

func TestProbeBusy(t *testing.T) {
	img := image(t, diskSize, map[int64]string{1080: "\x53\xef"})
	tests := []struct {
		name     string
		failures int // exclusive opens that fail with EBUSY
		other    error
		want     probeResult
	}{
		{name: "free", want: probeResult{signature: "ext4"}},
		{name: "busy: its signature is still read", failures: busyAttempts, want: probeResult{signature: "ext4", busy: true}},
		{name: "a sibling container's instant", failures: busyAttempts - 1, want: probeResult{signature: "ext4"}},
		{name: "no permission", other: unix.EPERM, want: probeResult{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			open := func(path string, exclusive bool) (Device, error) {
				if exclusive {
					if tc.other != nil {
						return nil, &os.PathError{Op: "open", Path: path, Err: tc.other}
					}
					if n++; n <= tc.failures {
						return nil, &os.PathError{Op: "open", Path: path, Err: unix.EBUSY}
					}
				}
				return OpenDevice(path, false)
			}
			got := probe(open, img)
			if got.signature != tc.want.signature || got.busy != tc.want.busy || (got.err != nil) != (tc.other != nil) {
				t.Errorf("probe = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// blockingDevice is a device whose reads hang until release is closed, as
// those of a multipath device without paths do.
type blockingDevice struct{ release chan struct{} }

func (b *blockingDevice) ReadAt(p []byte, _ int64) (int, error) { <-b.release; return len(p), nil }
func (b *blockingDevice) Close() error                          { return nil }
func (b *blockingDevice) Size() (int64, error)                  { return diskSize, nil }

func TestProbeTimeout(t *testing.T) {
	devDir, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	stuck := &blockingDevice{release: make(chan struct{})}
	defer close(stuck.release)
	open := func(path string, exclusive bool) (Device, error) {
		if filepath.Base(path) == "sda" && !exclusive {
			return stuck, nil
		}
		return OpenDevice(path, false)
	}
	inv := &Inventory{SysDir: recordedSys, DevDir: devDir, ByIDDir: byID, Probe: true, Open: open, ProbeTimeout: 100 * time.Millisecond}
	start := time.Now()
	disks, err := inv.Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("inventory took %v with one stuck device", elapsed)
	}
	got := map[string]string{}
	for _, d := range disks {
		got[d.Name] = d.Signature
	}
	if got["sda"] != report.SignatureUnknown || got["sdb"] != "ext4" || got["vda"] != report.SignatureNone {
		t.Errorf("signatures %v: want sda unknown, the others probed", got)
	}
}

func TestInventoryBusyAndUdev(t *testing.T) {
	devDir, byID := recordedDev(t)
	_, ctx := ktesting.NewTestContext(t)
	udev := t.TempDir()
	for dev, record := range map[string]string{
		"b8:0":   "S:disk/by-id/wwn-0x5002538e40a1b2c3\nE:ID_FS_TYPE=zfs_member\nE:ID_FS_USAGE=filesystem\n", // sda: blank to the probe
		"b8:32":  "E:ID_FS_TYPE=linux_raid_member\n",                                                         // sdc: no image
		"b8:16":  "E:ID_FS_TYPE=xfs\n",                                                                       // sdb: the probe's ext4 wins
		"b254:0": "E:ID_PART_TABLE_TYPE=gpt\n",                                                               // vda
	} {
		if err := os.WriteFile(filepath.Join(udev, dev), []byte(record), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := &recordingOpener{busy: map[string]bool{"nvme0n1": true}}
	inv := &Inventory{SysDir: recordedSys, DevDir: devDir, ByIDDir: byID, UdevDataDir: udev, Probe: true, Open: o.open}
	disks, err := inv.Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range disks {
		got[d.Name] = d.Signature
		if d.Busy != (d.Name == "nvme0n1") {
			t.Errorf("disk %s busy %v", d.Name, d.Busy)
		}
	}
	// nvme1n1 (partitions) and vdb (a holder) are not read (H2).
	want := map[string]string{"nvme0n1": report.SignatureNone, "nvme1n1": "", "sda": "zfs_member", "sdb": "ext4",
		"sdc": "linux_raid_member", "vda": "gpt", "vdb": ""}
	for name, sig := range want {
		if got[name] != sig {
			t.Errorf("disk %s: signature %q, want %q", name, got[name], sig)
		}
	}
}

func TestUdevSignature(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, record, want string
	}{
		{name: "file system", record: "E:ID_FS_TYPE=ext4\nE:ID_FS_UUID=1234\n", want: "ext4"},
		{name: "file system before table", record: "E:ID_PART_TABLE_TYPE=dos\nE:ID_FS_TYPE=iso9660\n", want: "iso9660"},
		{name: "partition table", record: "E:ID_PART_TABLE_TYPE=gpt\n", want: "gpt"},
		{name: "multipath path", record: "E:DM_MULTIPATH_DEVICE_PATH=1\nE:ID_FS_TYPE=mpath_member\n", want: "mpath_member"},
		{name: "nothing recorded", record: "E:ID_SERIAL=abc\nE:ID_FS_TYPE=\n", want: ""},
		{name: "odd characters", record: "E:ID_FS_TYPE=a b/c\xff\n", want: "abc"},
		{name: "a type that reads as none", record: "E:ID_FS_TYPE=none\n", want: "other"},
		{name: "nothing usable", record: "E:ID_FS_TYPE=/\n", want: "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "b9:9"), []byte(tc.record), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := udevSignature(dir, "9:9"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	for _, devNum := range []string{"8:99", "", "../b9:9"} {
		if got := udevSignature(dir, devNum); got != "" {
			t.Errorf("device %q: got %q, want none", devNum, got)
		}
	}
	if got := udevSignature(filepath.Join(dir, "missing"), "9:9"); got != "" {
		t.Errorf("missing database: got %q", got)
	}
}
