package discovery

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nodeplug/nodeplug/pkg/localpv/report"
)

// probeBytes is how much of a device the signature probe reads: enough for
// the Btrfs superblock at 64 KiB.
const probeBytes = 68 << 10

// signature is a magic string at a byte offset and the type it names.
type signature struct {
	offset int
	magic  []byte
	name   string
}

// signatures are checked in order; the first match names the content. A
// partition table comes first, as a GPT disk also carries a protective MBR.
var signatures = []signature{
	{512, []byte("EFI PART"), "gpt"},
	{4096, []byte("EFI PART"), "gpt"},
	{0, []byte("LUKS\xba\xbe"), "crypto_LUKS"},
	{0, []byte("XFSB"), "xfs"},
	{0, []byte("hsqs"), "squashfs"},
	{3, []byte("NTFS    "), "ntfs"},
	{3, []byte("EXFAT   "), "exfat"},
	{512, []byte("LABELONE"), "LVM2_member"},
	{1080, []byte{0x53, 0xef}, "ext4"},
	{1024, le32(0xf2f52010), "f2fs"},
	{0, le32(0xa92b4efc), "linux_raid_member"},
	{4096, le32(0xa92b4efc), "linux_raid_member"},
	{4096 + 24, []byte{0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81}, "bcache"},
	{4086, []byte("SWAPSPACE2"), "swap"},
	{4086, []byte("SWAP-SPACE"), "swap"},
	{32769, []byte("CD001"), "iso9660"},
	{65536 + 64, []byte("_BHRfS_M"), "btrfs"},
	{54, []byte("FAT"), "vfat"},
	{82, []byte("FAT32"), "vfat"},
	{510, []byte{0x55, 0xaa}, "dos"},
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// ProbeSignature reads the first sectors of a device (or image) and returns
// the partition table or file system type they hold, or
// report.SignatureNone. It only reads.
func ProbeSignature(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, probeBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("failed to read %s: %w", path, err)
	}
	return matchSignature(buf[:n]), nil
}

func matchSignature(head []byte) string {
	for _, s := range signatures {
		end := s.offset + len(s.magic)
		if end <= len(head) && bytes.Equal(head[s.offset:end], s.magic) {
			return s.name
		}
	}
	return report.SignatureNone
}
