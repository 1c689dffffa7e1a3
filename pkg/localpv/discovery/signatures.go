package discovery

import (
	"bytes"
	"encoding/binary"
)

// How much of a device the probe reads: its first 512 KiB (the ZFS labels
// L0 and L1 with their uberblocks, every superblock below) and its last
// 1 MiB (ZFS labels L2 and L3 of a size not aligned to 256 KiB, md 0.90
// and 1.0 superblocks, DRBD internal meta-data, the GPT backup header,
// RAID anchors).
const (
	headBytes = 512 << 10
	tailBytes = 1 << 20
)

// deviceBytes is what the probe read of a device: its first and its last
// bytes, and its size.
type deviceBytes struct {
	size int64
	head []byte // bytes [0, len(head))
	tail []byte // bytes [size-len(tail), size)
}

// at returns the n bytes at offset off, or nil when they were not read.
func (b *deviceBytes) at(off int64, n int) []byte {
	end := off + int64(n)
	switch {
	case off < 0:
		return nil
	case end <= int64(len(b.head)):
		return b.head[off:end]
	case off >= b.size-int64(len(b.tail)) && end <= b.size:
		start := off - (b.size - int64(len(b.tail)))
		return b.tail[start : start+int64(n)]
	}
	return nil
}

func (b *deviceBytes) has(off int64, magic []byte) bool {
	got := b.at(off, len(magic))
	return got != nil && bytes.Equal(got, magic)
}

// signature names a content type and says whether a device holds it.
type signature struct {
	name  string
	match func(b *deviceBytes) bool
}

// atStart is a magic at one of the given offsets from the start.
func atStart(name string, magic []byte, offsets ...int64) signature {
	return signature{name: name, match: func(b *deviceBytes) bool {
		for _, off := range offsets {
			if b.has(off, magic) {
				return true
			}
		}
		return false
	}}
}

// fromEnd is a magic at offsets computed from the device's size.
func fromEnd(name string, magic []byte, where ...func(size int64) int64) signature {
	return signature{name: name, match: func(b *deviceBytes) bool {
		for _, w := range where {
			if b.has(w(b.size), magic) {
				return true
			}
		}
		return false
	}}
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// Magic numbers and where they lie, from the formats' public descriptions.
var (
	mdMagic       = uint32(0xa92b4efc)
	bcacheMagic   = []byte{0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81}
	bcachefsMagic = []byte{0xc6, 0x85, 0x73, 0xf6, 0x66, 0xce, 0x90, 0xa9, 0xd9, 0x6a, 0x60, 0xcf, 0x80, 0x3d, 0xf7, 0xef}
	stratisMagic  = []byte("!Stra0tis\x86\xff\x02^Arh")
	gfs2Magic     = append(be32(0x01161970), be32(1)...) // magic, then type 1: superblock
	// isw is the signature of Intel Matrix Storage (IMSM) RAID metadata.
	iswMagic = []byte("Intel Raid ISM Cfg Sig. ")
)

// md 0.90: a 4 KiB superblock in the last 64 KiB-aligned 64 KiB block.
func md090(size int64) int64 { return size&^(64<<10-1) - 64<<10 }

// md 1.0: 8 KiB before the end, aligned down to 4 KiB.
func md10(size int64) int64 { return (size - 8<<10) &^ (4<<10 - 1) }

// DRBD internal meta-data: the last 4 KiB, whether the size is aligned to
// 4 KiB (the kernel's placement) or not (blkid's reading), with the magic
// after the size, the UUIDs and the flags.
func drbdAligned(size int64) int64 { return size&^(4<<10-1) - 4<<10 + 60 }
func drbd(size int64) int64        { return size - 4<<10 + 60 }

func lastBytes(n int64) func(int64) int64 { return func(size int64) int64 { return size - n } }

// signatures are checked in order; the first match names the content. A
// partition table comes first, as a GPT disk also carries a protective MBR;
// the DOS boot sector mark comes last, as many file systems carry it too.
var signatures = []signature{
	atStart("gpt", []byte("EFI PART"), 512, 4096),
	fromEnd("gpt", []byte("EFI PART"), lastBytes(512), lastBytes(4096)),
	atStart("crypto_LUKS", []byte("LUKS\xba\xbe"), 0),
	atStart("crypto_LUKS", []byte("SKUL\xba\xbe"), 16<<10, 32<<10, 64<<10, 128<<10, 256<<10),
	atStart("xfs", []byte("XFSB"), 0),
	atStart("BitLocker", []byte("-FVE-FS-"), 3),
	atStart("ntfs", []byte("NTFS    "), 3),
	atStart("exfat", []byte("EXFAT   "), 3),
	atStart("ceph_bluestore", []byte("bluestore block device"), 0),
	atStart("vdo", []byte("dmvdo001"), 0),
	atStart("DM_integrity", []byte("integrt\x00"), 0),
	atStart("DM_verity_hash", []byte("verity\x00\x00"), 0),
	atStart("oracleasm", []byte("ORCLDISK"), 32),
	atStart("stratis", stratisMagic, 512+4, 9*512+4),
	atStart("squashfs", []byte("hsqs"), 0),
	atStart("LVM2_member", []byte("LABELONE"), 0, 512, 1024, 1536),
	atStart("linux_raid_member", le32(mdMagic), 0, 4096),
	fromEnd("linux_raid_member", le32(mdMagic), md090, md10),
	fromEnd("linux_raid_member", be32(mdMagic), md090),
	fromEnd("drbd", be32(0x8374026b), drbd, drbdAligned),
	fromEnd("drbd", be32(0x8374026c), drbd, drbdAligned),
	fromEnd("drbd", be32(0x8374026d), drbd, drbdAligned),
	fromEnd("ddf_raid_member", be32(0xde11de11), lastBytes(512)),
	fromEnd("isw_raid_member", iswMagic, lastBytes(1024)),
	{name: "zfs_member", match: zfsLabel},
	atStart("bcache", bcacheMagic, 4096+24),
	atStart("bcachefs", bcachefsMagic, 4096+24, 3584),
	atStart("ext4", []byte{0x53, 0xef}, 1080),
	atStart("f2fs", le32(0xf2f52010), 1024),
	atStart("erofs", le32(0xe0f5e1e2), 1024),
	atStart("nilfs2", []byte{0x34, 0x34}, 1024+6),
	atStart("ocfs2", []byte("OCFSV2"), 1024, 2048, 4096, 8192),
	atStart("jfs", []byte("JFS1"), 32768),
	atStart("reiserfs", []byte("ReIsErFs"), 8192+52, 65536+52),
	atStart("reiserfs", []byte("ReIsEr2Fs"), 8192+52, 65536+52),
	atStart("reiserfs", []byte("ReIsEr3Fs"), 8192+52, 65536+52),
	atStart("reiser4", []byte("ReIsEr4"), 65536),
	atStart("gfs2", gfs2Magic, 65536),
	atStart("btrfs", []byte("_BHRfS_M"), 65536+64),
	atStart("swap", []byte("SWAPSPACE2"), 4096-10, 8192-10, 16384-10, 65536-10),
	atStart("swap", []byte("SWAP-SPACE"), 4096-10),
	atStart("iso9660", []byte("CD001"), 32769),
	atStart("udf", []byte("BEA01"), 32769),
	atStart("udf", []byte("NSR02"), 34817, 36865),
	atStart("udf", []byte("NSR03"), 34817, 36865),
	atStart("vfat", []byte("FAT"), 54),
	atStart("vfat", []byte("FAT32"), 82),
	atStart("dos", []byte{0x55, 0xaa}, 510),
}

// ZFS keeps four 256 KiB labels, two at the start and two at the end of
// the device's size aligned down to 256 KiB. Each label's second half is a
// ring of uberblocks, one per KiB or more, that start with the 64-bit magic
// 0x00bab10c in the pool's byte order.
const (
	zfsLabelBytes   = 256 << 10
	zfsRingOffset   = 128 << 10
	zfsSlotBytes    = 1 << 10
	zfsUberblockTag = 0x00bab10c
)

func zfsLabel(b *deviceBytes) bool {
	aligned := b.size &^ (zfsLabelBytes - 1)
	le, be := binary.LittleEndian.AppendUint64(nil, zfsUberblockTag), binary.BigEndian.AppendUint64(nil, zfsUberblockTag)
	for _, label := range []int64{0, zfsLabelBytes, aligned - 2*zfsLabelBytes, aligned - zfsLabelBytes} {
		if label < 0 {
			continue
		}
		for slot := int64(0); slot < zfsLabelBytes-zfsRingOffset; slot += zfsSlotBytes {
			off := label + zfsRingOffset + slot
			if b.has(off, le) || b.has(off, be) {
				return true
			}
		}
	}
	return false
}

// matchSignature names the content of a device's bytes, or "" for none.
func matchSignature(b *deviceBytes) string {
	for _, s := range signatures {
		if s.match(b) {
			return s.name
		}
	}
	return ""
}
