package identity

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"io"

	"github.com/google/uuid"
)

// superblockFormat says where a file system keeps its magic and UUID on
// its device.
type superblockFormat struct {
	name            string
	magicAt, uuidAt int64
	magic           []byte
}

// superblocks are the file systems whose UUID is read from the device when
// the kernel gives none: ext2/3/4 (superblock at 1 KiB: s_magic at 0x38,
// s_uuid at 0x68), xfs (at 0: "XFSB", sb_uuid at 32), btrfs (at 64 KiB:
// "_BHRfS_M" at 0x40, fsid at 0x20).
var superblocks = []superblockFormat{
	{name: "ext4", magicAt: 1024 + 0x38, uuidAt: 1024 + 0x68, magic: binary.LittleEndian.AppendUint16(nil, 0xEF53)},
	{name: "xfs", magicAt: 0, uuidAt: 32, magic: []byte("XFSB")},
	{name: "btrfs", magicAt: 0x10000 + 0x40, uuidAt: 0x10000 + 0x20, magic: []byte("_BHRfS_M")},
}

// superblockUUID returns the UUID in the superblock of the ext4, xfs or
// btrfs file system on r, or false when r holds none of them or its UUID is
// all zeros.
func superblockUUID(r io.ReaderAt) (string, bool) {
	for _, f := range superblocks {
		m := make([]byte, len(f.magic))
		if _, err := r.ReadAt(m, f.magicAt); err != nil || !bytes.Equal(m, f.magic) {
			continue
		}
		u := make([]byte, 16)
		if _, err := r.ReadAt(u, f.uuidAt); err != nil {
			return "", false
		}
		return formatUUID(u)
	}
	return "", false
}

// formatUUID formats a file system UUID as the kernel reports it: a
// 16-byte UUID in its canonical form, another length in hex. All zeros (or
// nothing) is no UUID.
func formatUUID(b []byte) (string, bool) {
	if len(b) == 0 || bytes.Count(b, []byte{0}) == len(b) {
		return "", false
	}
	if len(b) == 16 {
		return uuid.UUID(b).String(), true
	}
	return hex.EncodeToString(b), true
}

// parseUUID normalises a UUID written as text (udev's ID_FS_UUID): only a
// 16-byte UUID counts.
func parseUUID(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return formatUUID(u[:])
}
