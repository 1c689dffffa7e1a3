package discovery

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// diskSize is the size of the test images: 64 MiB and 20992 bytes, aligned
// to 512 bytes but not to 4 KiB, 64 KiB or 256 KiB, so that each format's
// rule for placing metadata at the end is tested.
const diskSize = 64<<20 + 20992

// Offsets from the formats' descriptions, worked out for diskSize.
const (
	md090At      = 64<<20 - 64<<10            // last 64 KiB-aligned block minus 64 KiB
	md10At       = 64<<20 + 12288             // 8 KiB before the end, aligned down to 4 KiB
	drbdAt       = diskSize - 4096 + 60       // the last 4 KiB, magic at 60
	zfsL2Ring    = 64<<20 - 512<<10 + 128<<10 // label L2 of the size aligned to 256 KiB, its uberblock ring
	zfsL1Ring    = 256<<10 + 128<<10
	lastSector   = diskSize - 512
	secondToLast = diskSize - 1024
)

func le64(v uint64) string { return string(binary.LittleEndian.AppendUint64(nil, v)) }
func be64(v uint64) string { return string(binary.BigEndian.AppendUint64(nil, v)) }

func TestProbeSignature(t *testing.T) {
	tests := []struct {
		name   string
		size   int64
		magics map[int64]string
		want   string
	}{
		{name: "empty device", want: report.SignatureNone},
		{name: "zeroed disk", size: diskSize, want: report.SignatureNone},
		{name: "small image", size: 3000, magics: map[int64]string{1080: "\x53\xef"}, want: "ext4"},
		{name: "magic in the middle is not read", size: diskSize, magics: map[int64]string{8 << 20: "EFI PART"}, want: report.SignatureNone},
		{name: "GPT", size: diskSize, magics: map[int64]string{512: "EFI PART"}, want: "gpt"},
		{name: "GPT backup header only", size: diskSize, magics: map[int64]string{lastSector: "EFI PART"}, want: "gpt"},
		{name: "GPT backup header of a 4Kn disk", size: diskSize, magics: map[int64]string{diskSize - 4096: "EFI PART"}, want: "gpt"},
		{name: "MBR", size: diskSize, magics: map[int64]string{510: "\x55\xaa"}, want: "dos"},
		{name: "ext4", size: diskSize, magics: map[int64]string{1080: "\x53\xef"}, want: "ext4"},
		{name: "XFS", size: diskSize, magics: map[int64]string{0: "XFSB"}, want: "xfs"},
		{name: "Btrfs", size: diskSize, magics: map[int64]string{65600: "_BHRfS_M"}, want: "btrfs"},
		{name: "LUKS", size: diskSize, magics: map[int64]string{0: "LUKS\xba\xbe"}, want: "crypto_LUKS"},
		{name: "LUKS2 secondary header", size: diskSize, magics: map[int64]string{16384: "SKUL\xba\xbe"}, want: "crypto_LUKS"},
		{name: "LVM label in sector 0", size: diskSize, magics: map[int64]string{0: "LABELONE"}, want: "LVM2_member"},
		{name: "LVM", size: diskSize, magics: map[int64]string{512: "LABELONE"}, want: "LVM2_member"},
		{name: "swap", size: diskSize, magics: map[int64]string{4086: "SWAPSPACE2"}, want: "swap"},
		{name: "swap of 64 KiB pages", size: diskSize, magics: map[int64]string{65526: "SWAPSPACE2"}, want: "swap"},
		{name: "md 1.1", size: diskSize, magics: map[int64]string{0: "\xfc\x4e\x2b\xa9"}, want: "linux_raid_member"},
		{name: "md 1.2", size: diskSize, magics: map[int64]string{4096: "\xfc\x4e\x2b\xa9"}, want: "linux_raid_member"},
		{name: "md 1.0 member", size: diskSize, magics: map[int64]string{md10At: "\xfc\x4e\x2b\xa9\x01\x00\x00\x00"}, want: "linux_raid_member"},
		{name: "md 1.0 magic off its block", size: diskSize, magics: map[int64]string{md10At + 512: "\xfc\x4e\x2b\xa9"}, want: report.SignatureNone},
		{name: "md 0.90 member", size: diskSize, magics: map[int64]string{md090At: "\xfc\x4e\x2b\xa9"}, want: "linux_raid_member"},
		{name: "md 0.90 member, big-endian", size: diskSize, magics: map[int64]string{md090At: "\xa9\x2b\x4e\xfc"}, want: "linux_raid_member"},
		{name: "DRBD 8 internal meta-data", size: diskSize, magics: map[int64]string{drbdAt: "\x83\x74\x02\x6b"}, want: "drbd"},
		{name: "DRBD 9 internal meta-data, aligned", size: diskSize, magics: map[int64]string{diskSize&^4095 - 4096 + 60: "\x83\x74\x02\x6d"}, want: "drbd"},
		{name: "DDF RAID anchor", size: diskSize, magics: map[int64]string{lastSector: "\xde\x11\xde\x11"}, want: "ddf_raid_member"},
		{name: "Intel IMSM RAID", size: diskSize, magics: map[int64]string{secondToLast: "Intel Raid ISM Cfg Sig. "}, want: "isw_raid_member"},
		{name: "ZFS label L2, little-endian", size: diskSize, magics: map[int64]string{zfsL2Ring + 5<<10: le64(0x00bab10c)}, want: "zfs_member"},
		{name: "ZFS label L3, big-endian", size: diskSize, magics: map[int64]string{zfsL2Ring + 256<<10 + 31<<10: be64(0x00bab10c)}, want: "zfs_member"},
		{name: "ZFS label L0", size: diskSize, magics: map[int64]string{128 << 10: le64(0x00bab10c)}, want: "zfs_member"},
		{name: "ZFS label L1", size: diskSize, magics: map[int64]string{zfsL1Ring + 127<<10: le64(0x00bab10c)}, want: "zfs_member"},
		{name: "ZFS magic outside the rings", size: diskSize, magics: map[int64]string{64 << 10: le64(0x00bab10c)}, want: report.SignatureNone},
		{name: "Ceph BlueStore", size: diskSize, magics: map[int64]string{0: "bluestore block device\n"}, want: "ceph_bluestore"},
		{name: "bcache", size: diskSize, magics: map[int64]string{4120: string(bcacheMagic)}, want: "bcache"},
		{name: "bcachefs", size: diskSize, magics: map[int64]string{4120: string(bcachefsMagic)}, want: "bcachefs"},
		{name: "JFS", size: diskSize, magics: map[int64]string{32768: "JFS1"}, want: "jfs"},
		{name: "ReiserFS 3.6", size: diskSize, magics: map[int64]string{65588: "ReIsEr2Fs"}, want: "reiserfs"},
		{name: "ReiserFS 3.5", size: diskSize, magics: map[int64]string{8244: "ReIsErFs"}, want: "reiserfs"},
		{name: "GFS2", size: diskSize, magics: map[int64]string{65536: "\x01\x16\x19\x70\x00\x00\x00\x01"}, want: "gfs2"},
		{name: "OCFS2", size: diskSize, magics: map[int64]string{8192: "OCFSV2"}, want: "ocfs2"},
		{name: "VDO", size: diskSize, magics: map[int64]string{0: "dmvdo001"}, want: "vdo"},
		{name: "Oracle ASM", size: diskSize, magics: map[int64]string{32: "ORCLDISK"}, want: "oracleasm"},
		{name: "Stratis", size: diskSize, magics: map[int64]string{9*512 + 4: "!Stra0tis\x86\xff\x02^Arh"}, want: "stratis"},
		{name: "nilfs2", size: diskSize, magics: map[int64]string{1030: "\x34\x34"}, want: "nilfs2"},
		{name: "erofs", size: diskSize, magics: map[int64]string{1024: "\xe2\xe1\xf5\xe0"}, want: "erofs"},
		{name: "BitLocker", size: diskSize, magics: map[int64]string{3: "-FVE-FS-"}, want: "BitLocker"},
		{name: "UDF", size: diskSize, magics: map[int64]string{32769: "BEA01"}, want: "udf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := image(t, tc.size, tc.magics)
			got, err := ProbeSignature(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := ProbeSignature(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing device must fail")
	}
}

// image writes a sparse image of the given size with magics at their
// offsets.
func image(t *testing.T, size int64, magics map[int64]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for off, m := range magics {
		if off < 0 || off+int64(len(m)) > size {
			t.Fatalf("magic at %d outside an image of %d bytes", off, size)
		}
		if _, err := f.WriteAt([]byte(m), off); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
