package identity

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"slices"
	"testing"
)

const (
	machineA = "3f9a1c0e5b7d4e2f8a6b0c1d2e3f4a5b"
	machineB = "b2c4d6e8f0a1b3c5d7e9f1a2b3c4d5e6"
)

var (
	rootHandle = []byte{2, 0, 0, 0, 0, 0, 0, 0} // every ext4 root: inode 2, generation 0
	dirHandle  = []byte{12, 0, 0, 0, 7, 0, 0, 0}
)

// TestLegacyIdentities: identities PVs recorded in an older format never
// compare Different with the same disk read now, and the legacy bare file
// handle never compares Same.
func TestLegacyIdentities(t *testing.T) {
	const u = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	nsUUID := NVMeNamespace{NSID: "2", UUID: "4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"}
	for _, tc := range []struct {
		name              string
		recorded, current ID
		want              Match
		refines           bool
	}{
		{name: "fh against itself (an old agent)", recorded: FileHandle(1, rootHandle), current: FileHandle(1, rootHandle), want: Unknown},
		{name: "fh, now the UUID from a fallback", recorded: FileHandle(1, rootHandle), current: FS(u, 1, rootHandle), want: Unknown, refines: true},
		{name: "fh, now the handle on its disk", recorded: FileHandle(1, rootHandle),
			current: FileHandleOnDisk(1, rootHandle, WWN("naa.5000c500a1b2c3d4")), want: Unknown, refines: true},
		{name: "fh, now the handle on an anonymous device", recorded: FileHandle(1, dirHandle),
			current: LocalFileHandle(0, 52, 1, dirHandle), want: Unknown, refines: true},
		{name: "fh, now another directory", recorded: FileHandle(1, rootHandle), current: FS(u, 1, dirHandle), want: Unknown},
		{name: "fs on 6.9, the same read by a fallback", recorded: FS(u, 1, rootHandle), current: FS(u, 1, rootHandle), want: Same},
		{name: "NVMe by controller serial, now by namespace", recorded: Serial("QEMU NVMe Ctrl", "deadbeef", 1<<30),
			current: NVMe("QEMU NVMe Ctrl", "deadbeef", 1<<30, nsUUID), want: Unknown, refines: true},
		{name: "NVMe by serial, now another controller's namespace", recorded: Serial("QEMU NVMe Ctrl", "deadbeef", 1<<30),
			current: NVMe("QEMU NVMe Ctrl", "feedface", 1<<30, nsUUID), want: Unknown},
		{name: "NVMe by serial, now a namespace of another size", recorded: Serial("M", "S1", 1<<30),
			current: NVMe("M", "S1", 2<<30, NVMeNamespace{NSID: "1"}), want: Unknown},
		{name: "NVMe with an EUI keeps its wwn", recorded: WWN("eui.0025388b91b3c0a1"), current: WWN("eui.0025388b91b3c0a1"), want: Same},
		// Unknown, not Same: the LUN found may be a sibling of the recorded
		// one under the same WWN; the master refines the record when no
		// other PV records the LUN found.
		{name: "a WWN recorded alone, now with its serial", recorded: WWN("naa.600a098038303053453f463045727a6f"),
			current: WWNSerial("naa.600a098038303053453f463045727a6f", "SN0001"), want: Unknown, refines: true},
		{name: "a WWN with its serial, now another WWN", recorded: WWN("naa.600a098038303053453f463045727a6f"),
			current: WWNSerial("naa.600a098038303053453f463045727a70", "SN0001"), want: Different},
		{name: "two LUNs with one WWN", recorded: WWNSerial("naa.600a098038303053453f463045727a6f", "SN0001"),
			current: WWNSerial("naa.600a098038303053453f463045727a6f", "SN0002"), want: Different},
		{name: "fs of a directory on the OS file system, now bound to its machine", recorded: FS(u, 1, dirHandle),
			current: OSFS(u, 1, dirHandle, machineA), want: Unknown, refines: true},
		{name: "fs, now another directory on the OS file system", recorded: FS(u, 1, rootHandle),
			current: OSFS(u, 1, dirHandle, machineA), want: Unknown},
		{name: "fs, now the OS file system of another UUID", recorded: FS(u, 1, dirHandle),
			current: OSFS("9c2d0d6e-6a3b-4a0b-8f35-1f1a0b3c4d5e", 1, dirHandle, machineA), want: Unknown},
		{name: "fh, now a directory on the OS file system", recorded: FileHandle(1, dirHandle),
			current: OSFS(u, 1, dirHandle, machineA), want: Unknown, refines: true},
		{name: "a baked directory of one cloned image on two machines", recorded: OSFS(u, 1, dirHandle, machineA),
			current: OSFS(u, 1, dirHandle, machineB), want: Different},
		{name: "partition keeps its form", recorded: Partition(WWN("naa.1"), 1<<20, 1<<30), current: Partition(WWN("naa.1"), 1<<20, 1<<30), want: Same},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare(tc.recorded, tc.current); got != tc.want {
				t.Errorf("Compare(%q, %q) = %v, want %v", tc.recorded, tc.current, got, tc.want)
			}
			if got := Refines(tc.recorded, tc.current); got != tc.refines {
				t.Errorf("Refines(%q, %q) = %v, want %v", tc.recorded, tc.current, got, tc.refines)
			}
			// The index of a memory of disks finds each legacy record
			// that the disk found refines (TestLegacyBaseFindsRefined).
			if tc.refines && !slices.Contains(RefinedBases(tc.current), LegacyBase(tc.recorded)) {
				t.Errorf("LegacyBase(%q) = %q is not among RefinedBases(%q) = %q", tc.recorded, LegacyBase(tc.recorded),
					tc.current, RefinedBases(tc.current))
			}
			if SameDisk(tc.recorded, tc.current) && tc.want != Same {
				t.Error("SameDisk")
			}
			if err := tc.current.Valid(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestStrength: an identity is strong only when it names one device or
// file system wherever it is; placeholder serials, a controller's serial
// without a namespace identifier of its own, and device numbers are weak.
func TestStrength(t *testing.T) {
	for _, tc := range []struct {
		name   string
		id     ID
		strong bool
	}{
		{"wwn", WWN("naa.5000c500a1b2c3d4"), true},
		{"zero wwn", WWN("naa.0000000000000000"), false},
		{"wwn with serial", WWNSerial("naa.600a098038303053453f463045727a6f", "SN:0001"), true},
		{"serial", Serial("SAMSUNG MZ7", "S3Z1NB0K", 1<<40), true},
		{"serial with a colon in the model", Serial("WDC:X", "WD-1", 1<<40), true},
		{"GCE local SSD serial", Serial("nvme_card", "nvme_card", 402653184000), false},
		{"zero serial", Serial("M", "00000000", 1<<30), false},
		{"blank serial", Serial("M", "   ", 1<<30), false},
		{"OEM filler", Serial("M", "To Be Filled By O.E.M.", 1<<30), false},
		{"NVMe namespace UUID", NVMe("nvme_card", "nvme_card", 1<<30, NVMeNamespace{NSID: "1", UUID: "4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"}), true},
		{"NVMe nsid of a real serial", NVMe("Samsung", "S4EWNX0N", 1<<30, NVMeNamespace{NSID: "3"}), true},
		{"NVMe nsid of nvme_card", NVMe("nvme_card", "nvme_card", 1<<30, NVMeNamespace{NSID: "1", Address: "0000:00:04.0"}), false},
		{"handle on a strong disk", FileHandleOnDisk(1, rootHandle, WWN("naa.1")), true},
		{"handle on a partition of a strong disk", FileHandleOnDisk(1, rootHandle, Partition(Serial("M:X", "S3Z1NB0K", 1), 1, 2)), true},
		{"handle on a loop device", FileHandleOnDisk(1, rootHandle, Loop("/var/a.img", 0, 0)), false},
		{"handle on a placeholder disk", FileHandleOnDisk(1, rootHandle, Serial("nvme_card", "nvme_card", 1)), false},
		{"handle and device number", LocalFileHandle(0, 52, 1, rootHandle), false},
		{"legacy handle", FileHandle(1, rootHandle), false},
		{"directory on the OS file system", OSFS("1b4e28ba-2fa1-11d2-883f-0016d3cca427", 1, dirHandle, machineA), false},
		{"directory on the OS file system of an unbooted image", OSFS("1b4e28ba-2fa1-11d2-883f-0016d3cca427", 1, dirHandle, ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.id.Strong(); got != tc.strong {
				t.Errorf("Strong(%q) = %v, want %v", tc.id, got, tc.strong)
			}
			if err := tc.id.Valid(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSuperblockUUID(t *testing.T) {
	u := []byte{0x6a, 0x0f, 0x1c, 0x2e, 0x3b, 0x4d, 0x4e, 0x5f, 0x8a, 0x9b, 0x0c, 0x1d, 0x2e, 0x3f, 0x4a, 0x5b}
	const want = "6a0f1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	image := func(magicAt int64, magic []byte, uuidAt int64, id []byte) *bytes.Reader {
		b := make([]byte, 0x10000+4096)
		copy(b[magicAt:], magic)
		copy(b[uuidAt:], id)
		return bytes.NewReader(b)
	}
	ext4 := binary.LittleEndian.AppendUint16(nil, 0xEF53)
	for _, tc := range []struct {
		name string
		r    *bytes.Reader
		want string
	}{
		{"ext4", image(1024+0x38, ext4, 1024+0x68, u), want},
		{"xfs", image(0, []byte("XFSB"), 32, u), want},
		{"btrfs", image(0x10040, []byte("_BHRfS_M"), 0x10020, u), want},
		{"ext4 without a UUID", image(1024+0x38, ext4, 1024+0x68, make([]byte, 16)), ""},
		{"no file system", image(0, nil, 32, u), ""},
		{"short device", bytes.NewReader(make([]byte, 100)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := superblockUUID(tc.r)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("superblockUUID = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestSources(t *testing.T) {
	if got := parseSources("generic-ioctl, udev,unknown"); got != SourceGenericIoctl|SourceUdev {
		t.Errorf("parseSources = %b", got)
	}
	restore := SetUnavailable(SourceSuperblock)
	if available(SourceSuperblock) || !available(SourceFSIoctl) {
		t.Error("SetUnavailable did not take")
	}
	restore()
	if !available(SourceSuperblock) {
		t.Error("restore did not restore")
	}
}

// TestReadNamespace reads an NVMe namespace's identifiers as sysfs prints
// them, and the kernel's wwid forms where the attributes are missing.
func TestReadNamespace(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a/nsid": "3\n", "a/nguid": "0025385b-71b0-1234-0000-000000000000\n", "a/eui": "00 25 38 5b 71 b0 12 34\n",
		"a/device/address": "0000:04:00.0\n",
		"b/nsid":           "1\n", "b/uuid": "00000000-0000-0000-0000-000000000000\n",
	})
	for _, tc := range []struct {
		name, dir, wwid string
		want            *NVMeNamespace
	}{
		{"sysfs attributes", "a", "eui.0025385b71b012340000000000000000",
			&NVMeNamespace{NSID: "3", NGUID: "0025385b71b012340000000000000000", EUI64: "0025385b71b01234", Address: "0000:04:00.0"}},
		{"a zero UUID is none", "b", "", &NVMeNamespace{NSID: "1"}},
		{"the kernel's nvme. wwid", "c", "nvme.1ae0-6e766d655f63617264-6e766d655f63617264-0000000a", &NVMeNamespace{NSID: "10"}},
		{"the kernel's uuid. wwid", "c", "uuid.4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6", &NVMeNamespace{UUID: "4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"}},
		{"no namespace", "c", "naa.5000c500a1b2c3d4", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readNamespace(filepath.Join(root, tc.dir), tc.wwid)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("readNamespace = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPlaceholder(t *testing.T) {
	for _, tc := range []struct {
		serial string
		want   bool
	}{
		{"nvme_card", true}, {"nvme_card-pd", true}, {"", true}, {"    ", true}, {"0000-0000-0000", true},
		{"To Be Filled By O.E.M.", true}, {"FFFFFFFF", true}, {"S4EWNX0N123456", false}, {"deadbeef", false},
	} {
		if got := Placeholder(tc.serial); got != tc.want {
			t.Errorf("Placeholder(%q) = %v, want %v", tc.serial, got, tc.want)
		}
	}
}

// TestLegacyBaseFindsRefined: over every pair of a mix of identities, a
// recorded one that another refines shares its LegacyBase with that one's
// RefinedBases, so that an index by it misses no legacy record; an
// identity in no legacy form has no base.
func TestLegacyBaseFindsRefined(t *testing.T) {
	const u = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	ns := NVMeNamespace{NSID: "2", UUID: "4f1c9a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"}
	ids := []ID{FileHandle(1, rootHandle), FileHandle(1, dirHandle), FS(u, 1, rootHandle), FS(u, 1, dirHandle),
		OSFS(u, 1, dirHandle, machineA), OSFS(u, 1, rootHandle, machineB), FileHandleOnDisk(1, rootHandle, WWN("naa.1")),
		LocalFileHandle(0, 52, 1, dirHandle), Serial("QEMU NVMe Ctrl", "dead:beef", 1<<30), NVMe("QEMU NVMe Ctrl", "dead:beef", 1<<30, ns),
		NVMe("QEMU NVMe Ctrl", "feedface", 1<<30, ns), WWN("naa.600a"), WWNSerial("naa.600a", "SN:1"), WWNSerial("naa.600b", "SN1"),
		Loop("/var/a.img", 0, 0), Partition(WWN("naa.1"), 1<<20, 1<<30)}
	refined := 0
	for _, r := range ids {
		for _, c := range ids {
			if !Refines(r, c) {
				continue
			}
			refined++
			if b := LegacyBase(r); b == "" || !slices.Contains(RefinedBases(c), b) {
				t.Errorf("%q refines %q, but LegacyBase %q is not among RefinedBases %q", c, r, b, RefinedBases(c))
			}
		}
	}
	if refined < 6 {
		t.Errorf("only %d pairs refine: the test checks too little", refined)
	}
	for _, id := range []ID{OSFS(u, 1, dirHandle, machineA), Loop("/var/a.img", 0, 0), WWNSerial("naa.600a", "SN1"), ""} {
		if b := LegacyBase(id); b != "" {
			t.Errorf("LegacyBase(%q) = %q, want none", id, b)
		}
	}
}
